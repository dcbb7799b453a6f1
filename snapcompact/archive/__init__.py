"""History -> archive: messages, serialization, data-URL elision, file lists, frame planning,
the stored archive, compacting into it and reading it back as request blocks.

Rooms (one job each):

* :mod:`.messages`: the agent message model; :mod:`.serialize`: history as role-tagged text;
  :mod:`.dataurl`: inline data URLs collapsed; :mod:`.file_ops`: the files a stretch touched;
* :mod:`.model`: the persisted archive under ``preserveData["snapcompact"]``;
* :mod:`.compactor`: one compaction (arguments, serialization, shape, guide, projection);
  :mod:`.growth`: each policy's growth of the archive (carry, draw, character accounting);
  :mod:`.plan`: which text becomes frames, stays text or is dropped; :mod:`.frame_reuse`:
  recurring pages carried rather than redrawn; :mod:`.reading_guide`: how to read the frames;
* :mod:`.history`: the archive read back as a request's text and image blocks.

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.archive.compactor import (
        CompactionRejected,
        CompactionResult,
        compact,
    )
    from snapcompact.archive.dataurl import elide_data_urls
    from snapcompact.archive.file_ops import (
        FILE_LIST_LIMIT,
        FileOperations,
        compute_file_lists,
        file_ops_from_messages,
        format_file_list,
        format_grouped_paths,
        is_url_scheme_path,
        split_read_selector,
        strip_read_selector,
        upsert_file_operations,
    )
    from snapcompact.archive.growth import CharAccounting, strip_thinking_sections
    from snapcompact.archive.history import (
        LazyFrameData,
        archive_blocks,
        archive_source_text,
        history_blocks,
        images,
    )
    from snapcompact.archive.messages import (
        AssistantMessage,
        Block,
        DeveloperMessage,
        ImageBlock,
        Message,
        TextBlock,
        ToolCallBlock,
        ToolResultMessage,
        UserMessage,
        message_from_json,
        messages_from_json,
        messages_to_json,
    )
    from snapcompact.archive.model import (
        POLICIES,
        PRESERVE_KEY,
        PROVIDER_COMPACTION_KEYS,
        Archive,
        ArchiveFrame,
        get_preserved_archive,
        strip_preserved_archive,
    )
    from snapcompact.archive.plan import elide_middle, visible_len
    from snapcompact.archive.serialize import (
        SerializeOptions,
        js_json_stringify,
        message_sections,
        result_fact,
        serialize_conversation,
        truncate_middle,
    )

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "Archive": "model",
    "archive_blocks": "history",
    "archive_source_text": "history",
    "ArchiveFrame": "model",
    "AssistantMessage": "messages",
    "Block": "messages",
    "CharAccounting": "growth",
    "compact": "compactor",
    "CompactionRejected": "compactor",
    "CompactionResult": "compactor",
    "compute_file_lists": "file_ops",
    "DeveloperMessage": "messages",
    "elide_data_urls": "dataurl",
    "elide_middle": "plan",
    "FILE_LIST_LIMIT": "file_ops",
    "file_ops_from_messages": "file_ops",
    "FileOperations": "file_ops",
    "format_file_list": "file_ops",
    "format_grouped_paths": "file_ops",
    "get_preserved_archive": "model",
    "history_blocks": "history",
    "ImageBlock": "messages",
    "images": "history",
    "is_url_scheme_path": "file_ops",
    "js_json_stringify": "serialize",
    "LazyFrameData": "history",
    "Message": "messages",
    "message_from_json": "messages",
    "messages_from_json": "messages",
    "messages_to_json": "messages",
    "POLICIES": "model",
    "PRESERVE_KEY": "model",
    "PROVIDER_COMPACTION_KEYS": "model",
    "serialize_conversation": "serialize",
    "message_sections": "serialize",
    "result_fact": "serialize",
    "SerializeOptions": "serialize",
    "split_read_selector": "file_ops",
    "strip_preserved_archive": "model",
    "strip_read_selector": "file_ops",
    "strip_thinking_sections": "growth",
    "TextBlock": "messages",
    "ToolCallBlock": "messages",
    "ToolResultMessage": "messages",
    "truncate_middle": "serialize",
    "upsert_file_operations": "file_ops",
    "UserMessage": "messages",
    "visible_len": "plan",
}

__all__ = [
    "Archive",
    "ArchiveFrame",
    "AssistantMessage",
    "Block",
    "CharAccounting",
    "CompactionRejected",
    "CompactionResult",
    "DeveloperMessage",
    "FILE_LIST_LIMIT",
    "FileOperations",
    "ImageBlock",
    "LazyFrameData",
    "Message",
    "POLICIES",
    "PRESERVE_KEY",
    "PROVIDER_COMPACTION_KEYS",
    "SerializeOptions",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultMessage",
    "UserMessage",
    "archive_blocks",
    "archive_source_text",
    "compact",
    "compute_file_lists",
    "elide_data_urls",
    "elide_middle",
    "file_ops_from_messages",
    "format_file_list",
    "format_grouped_paths",
    "get_preserved_archive",
    "history_blocks",
    "images",
    "is_url_scheme_path",
    "js_json_stringify",
    "message_from_json",
    "messages_from_json",
    "messages_to_json",
    "message_sections",
    "result_fact",
    "serialize_conversation",
    "split_read_selector",
    "strip_preserved_archive",
    "strip_read_selector",
    "strip_thinking_sections",
    "truncate_middle",
    "upsert_file_operations",
    "visible_len",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
