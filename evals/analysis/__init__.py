"""Room: records -> tables, intervals, plots, the winner per model line, the model -> shape
table edit, research comparisons and the search objectives.

Modules: ``aggregate`` (records -> the tidy table: reader, model line, production verdict, the
shape an arm stands for), ``resampling`` (the unit, seeds and bootstrap), ``intervals``
(Wilson), ``session_bootstrap`` (sessions as the unit of evidence), ``summary`` (per arm:
recall, bill, compression, frontier), ``recall_breakdown`` (recall by evidence round and
depth), ``winner`` (the winner rule per model line), ``write_model_shapes`` and
``apply_gate`` (the table edit and its gate), ``report`` (the markdown report), ``table``
(``snapcompact-eval-table``), ``table_outputs`` (what it writes, from the records as committed:
the one path ``--check`` re-derives by), ``table_sources`` (which runs a table reads),
``docs_blocks``
and ``rederive`` (``--check``: every quoted and generated figure rebuilt from committed
records; ``diff_lines`` names file, line and both values), ``plot`` and ``plot_marks`` (ranked
arms compared, the others drawn apart, intervals with n), ``frame_costs``,
``research_compare`` / ``research_rows`` / ``research_records`` (its per-question records,
committed as Parquet) / ``research_rederive`` (rebuilt from committed per-session figures) /
``research_plot``, ``search_front`` / ``search_objectives``,
``outcomes`` (correct / abstained / wrong per reader, arm and probe kind; silent wrong answers),
``frame_pay`` (where frames pay: characters per billed token, text vs frames, by content type)
``frame_pay_plot`` (its figure, "where snapcompact pays") and ``study`` (a pre-registered
study: its plan, power analysis, runs, endpoints and report; ``python -m evals.analysis.study``).
The study sits in this room because its endpoints are aggregates and session bootstraps, and
``--check`` remakes its report with the rest.
"""
