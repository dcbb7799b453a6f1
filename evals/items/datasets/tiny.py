"""The tiny needles set: a few hundred tokens of fixed prose, for tests and CI.

Why its own prose: the full needles set reads stdlib docstrings, which change between Python
versions, so its text differs from machine to machine. CI and the default offline run want the
same bytes everywhere, so "tiny" draws its haystack from the short passages below (written for
this project) and its needles from the same seeded generator as "needles".
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.items.datasets.needles import build_needle_items
from evals.items.qa_items import QAItem

TINY_PARAGRAPHS = (
    "The lighthouse on the northern cape was automated decades ago, yet a keeper still visits "
    "every week. She checks the lamp, oils the hinges of the iron door and writes the date in a "
    "logbook that nobody else reads. Storms have cracked two of the lower windows since spring.",
    "Bread rises faster in a warm kitchen, but a slow rise in a cool room gives the crumb more "
    "flavour. Many bakers mix the dough in the evening and leave it covered overnight. In the "
    "morning they shape the loaves, let them rest for an hour and bake them in a hot oven.",
    "The river changes its course a little every year. Old maps show a ford where there is now a "
    "deep pool, and the willows that once lined the eastern bank stand in a field far from the "
    "water. Farmers along the valley keep their own records of every flood.",
    "A good field notebook has numbered pages, a firm cover and paper that takes pencil well. "
    "Surveyors write the time beside each measurement and never erase a mistake; they strike it "
    "through with one line so that the original value can still be read later.",
    "The town choir rehearses on Thursday evenings in the hall behind the library. Newcomers are "
    "welcome, although the conductor asks them to listen for one session before they join. The "
    "winter concert usually fills every seat, and tickets sell out within days.",
    "Moths are drawn to pale light on warm, still nights. Naturalists who count them stretch a "
    "white sheet between two poles, hang a lamp in front of it and wait. By midnight the sheet "
    "is often covered with dozens of species, most of them smaller than a fingernail.",
    "Repairing a bicycle wheel starts with finding the loose spokes. A mechanic turns the wheel "
    "slowly, plucking each spoke like a string and listening to its note. A dull sound marks a "
    "slack spoke, which is tightened a quarter turn at a time until the rim runs true.",
    "The museum keeps its oldest letters in a cool room without windows. Visitors see copies, "
    "while the originals rest in acid-free boxes on steel shelves. Once a year a conservator "
    "opens each box, checks the paper for damp and records its condition in a ledger.",
)


def load_tiny(
    *,
    seed: int = 0,
    n_items: int = 2,
    target_tokens: int = 300,
    depths: Sequence[float] = (0.25, 0.75),
) -> list[QAItem]:
    """Two ~300-token items with two needles each, identical on every machine for a seed."""
    return build_needle_items(
        TINY_PARAGRAPHS,
        dataset="tiny",
        corpus="tiny-prose",
        seed=seed,
        n_items=n_items,
        target_tokens=target_tokens,
        depths=depths,
    )
