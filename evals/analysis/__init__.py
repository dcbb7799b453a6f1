"""Room: records -> tables, intervals, plots, the winner per model line, the model -> shape
table edit, research comparisons and the search objectives.
"""
