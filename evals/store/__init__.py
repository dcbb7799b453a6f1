"""Room: what a run writes: the records (the contract with analysis), the transcript store and
the pixel identity of a frame for the response cache.

- ``records``: the records file: rows appended whole or not at all, read back, one row per
  measurement chosen; re-exports the names below, where readers import them.
- ``record``: one row, :class:`Record`, as six groups with a flat read of every column.
- ``record_groups``: the groups (coordinates, context, frames, tokens and bill, answer and score,
  provenance), each a frozen dataclass.
- ``record_columns``: the flat columns: their file order, types, and groups <-> columns.
- ``record_upgrade``: the one converter of old rows (schema 1 and 2, renamed fields).
- ``blobs``: frames and contexts stored by content hash.
- ``transcripts``, ``sent_index``, ``pixel_keys``: the offline reader's transcripts, the index of
  sent contexts, a frame's pixel identity.
"""
