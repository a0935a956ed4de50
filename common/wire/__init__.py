"""Wire formats: binary frames for the data plane, the value codec, protobuf stubs."""

from ._codec import SUPPORTED_TYPES, DecodeError, decode, encode, is_supported_type
from ._columns import column_length, column_rows, columns, data_rows, decode_columns, rows
from ._frame import (
    FRAME_HEADER,
    FrameError,
    FrameReader,
    Kind,
    encode_frame,
    frame_checkpoint,
    frame_dest,
    frame_entries,
    frame_kind,
    frame_payload,
    frame_src,
    marker_frame,
    parse_frame,
    state_frame,
)

__all__ = [
    "FRAME_HEADER",
    "SUPPORTED_TYPES",
    "DecodeError",
    "FrameError",
    "FrameReader",
    "Kind",
    "column_length",
    "column_rows",
    "columns",
    "data_rows",
    "decode",
    "decode_columns",
    "encode",
    "encode_frame",
    "frame_checkpoint",
    "frame_dest",
    "frame_entries",
    "frame_kind",
    "frame_payload",
    "frame_src",
    "is_supported_type",
    "marker_frame",
    "parse_frame",
    "rows",
    "state_frame",
]
