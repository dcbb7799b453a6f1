"""The records viewer: a static site to see what the model saw, question by question.

``snapcompact-eval-view RUN_DIR... --out DIR`` writes plain HTML/CSS/JS that opens from disk
with no server and no network: an index of cells (model line x strategy x shape x policy), each
cell's questions in pages, and a page per question with the exact context that was sent (text
blocks, every frame at the size the provider showed it), the gold answers, the answer, the
score, the billed tokens of each block and, for the offline reader, its transcript with the
evidence and answer located. Every question shows its probe kind, its outcome (correct /
abstained / wrong, silent wrong and confabulated marked apart) and the reader that answered;
the told and blind readers' cells sit in tables of their own, linked to each other.
``entries`` turns record rows into what is shown; ``site`` writes it; ``cli`` is
``snapcompact-eval-view``.
"""

from evals.view.site import PAGE_SIZE, SiteStats, build_site

__all__ = ["PAGE_SIZE", "SiteStats", "build_site"]
