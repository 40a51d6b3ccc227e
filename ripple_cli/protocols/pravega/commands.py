"""The Pravega wire command codes, their names and which side sends them.

The codes are the current `WireCommandType.java` (wire version 17): the
2016 set used other numbers (WRONG_HOST=0, DATA_APPENDED=5), so only this
table is trusted.  Every code the segment store knows has a name here,
whether or not ripple decodes its fields (see `layouts.py`).
"""

from __future__ import annotations

from enum import Enum

HEADER_SIZE = 8  # int32 type + int32 length
# The segment store's frame decoder (Netty LengthFieldBasedFrameDecoder with
# MAX_WIRECOMMAND_SIZE) limits header plus body to 16 MiB - 1.
MAX_WIRECOMMAND_SIZE = 0x00FFFFFF
MAX_BODY = MAX_WIRECOMMAND_SIZE - HEADER_SIZE
# Serializer.MAX_EVENT_SIZE: the largest event payload a writer may send.
MAX_EVENT_SIZE = 8 << 20

WIRE_VERSION = 17  # WireCommands.WIRE_VERSION
OLDEST_COMPATIBLE_VERSION = 5
NEW_WRITER = -(1 << 63)  # AppendSetup.lastEventNumber of a writer the segment never saw (Long.MIN_VALUE)

HELLO = -127
PADDING = -1
PARTIAL_EVENT = -2
EVENT = 0
SETUP_APPEND = 1
APPEND_SETUP = 2
APPEND_BLOCK = 3
APPEND_BLOCK_END = 4
CONDITIONAL_APPEND = 5
DATA_APPENDED = 7
CONDITIONAL_CHECK_FAILED = 8
READ_SEGMENT = 9
SEGMENT_READ = 10
WRONG_HOST = 50
SEGMENT_IS_SEALED = 51
SEGMENT_ALREADY_EXISTS = 52
NO_SUCH_SEGMENT = 53
INVALID_EVENT_NUMBER = 55
SEGMENT_IS_TRUNCATED = 56
OPERATION_UNSUPPORTED = 57
AUTH_TOKEN_CHECK_FAILED = 60
ERROR_MESSAGE = 61
CONDITIONAL_BLOCK_END = 89
KEEP_ALIVE = 100


class Side(Enum):
    CLIENT = "request"  # sent by the writer/reader (the connection's client)
    SERVER = "reply"  # sent by the segment store
    BOTH = "both"  # Hello and KeepAlive go both ways


C, S, B = Side.CLIENT, Side.SERVER, Side.BOTH

# code -> (name as ripple shows it, the side that sends it)
COMMANDS: dict[int, tuple[str, Side]] = {
    HELLO: ("Hello", B),
    PADDING: ("Padding", C),
    PARTIAL_EVENT: ("PartialEvent", C),
    -3: ("FlushToStorage", C),
    -4: ("FlushedToStorage", S),
    -5: ("ListStorageChunks", C),
    -6: ("StorageChunksListed", S),
    EVENT: ("Event", C),
    SETUP_APPEND: ("SetupAppend", C),
    APPEND_SETUP: ("AppendSetup", S),
    APPEND_BLOCK: ("AppendBlock", C),
    APPEND_BLOCK_END: ("AppendBlockEnd", C),
    CONDITIONAL_APPEND: ("ConditionalAppend", C),
    DATA_APPENDED: ("DataAppended", S),
    CONDITIONAL_CHECK_FAILED: ("ConditionalCheckFailed", S),
    READ_SEGMENT: ("ReadSegment", C),
    SEGMENT_READ: ("SegmentRead", S),
    11: ("GetStreamSegmentInfo", C),
    12: ("StreamSegmentInfo", S),
    20: ("CreateSegment", C),
    21: ("SegmentCreated", S),
    28: ("SealSegment", C),
    29: ("SegmentSealed", S),
    30: ("DeleteSegment", C),
    31: ("SegmentDeleted", S),
    32: ("UpdateSegmentPolicy", C),
    33: ("SegmentPolicyUpdated", S),
    34: ("GetSegmentAttribute", C),
    35: ("SegmentAttribute", S),
    36: ("UpdateSegmentAttribute", C),
    37: ("SegmentAttributeUpdated", S),
    38: ("TruncateSegment", C),
    39: ("SegmentTruncated", S),
    40: ("CreateTransientSegment", C),
    41: ("LocateOffset", C),
    42: ("OffsetLocated", S),
    WRONG_HOST: ("WrongHost", S),
    SEGMENT_IS_SEALED: ("SegmentIsSealed", S),
    SEGMENT_ALREADY_EXISTS: ("SegmentAlreadyExists", S),
    NO_SUCH_SEGMENT: ("NoSuchSegment", S),
    INVALID_EVENT_NUMBER: ("InvalidEventNumber", S),
    SEGMENT_IS_TRUNCATED: ("SegmentIsTruncated", S),
    OPERATION_UNSUPPORTED: ("OperationUnsupported", S),
    58: ("MergeSegments", C),
    59: ("SegmentsMerged", S),
    AUTH_TOKEN_CHECK_FAILED: ("AuthTokenCheckFailed", S),
    ERROR_MESSAGE: ("ErrorMessage", S),
    68: ("GetTableSegmentInfo", C),
    69: ("TableSegmentInfo", S),
    70: ("CreateTableSegment", C),
    71: ("DeleteTableSegment", C),
    74: ("UpdateTableEntries", C),
    75: ("TableEntriesUpdated", S),
    76: ("RemoveTableKeys", C),
    77: ("TableKeysRemoved", S),
    78: ("ReadTable", C),
    79: ("TableRead", S),
    80: ("TableSegmentNotEmpty", S),
    81: ("TableKeyDoesNotExist", S),
    82: ("TableKeyBadVersion", S),
    83: ("ReadTableKeys", C),
    84: ("TableKeysRead", S),
    85: ("ReadTableEntries", C),
    86: ("TableEntriesRead", S),
    87: ("TableEntriesDeltaRead", S),
    88: ("ReadTableEntriesDelta", C),
    CONDITIONAL_BLOCK_END: ("ConditionalBlockEnd", C),
    90: ("MergeSegmentsBatch", C),
    91: ("SegmentsBatchMerged", S),
    KEEP_ALIVE: ("KeepAlive", B),
}

UNKNOWN = "Unknown"  # the name of a code outside the table
CODES: dict[str, int] = {name: code for code, (name, _side) in COMMANDS.items()}

# Codes a resynchronising decoder accepts as the start of a command: the
# table without EVENT, which only ever appears nested inside data.
TOP_LEVEL = frozenset(COMMANDS) - {EVENT}


def name_of(code: int) -> str:
    entry = COMMANDS.get(code)
    return entry[0] if entry else UNKNOWN


def side_of(code: int) -> Side | None:
    entry = COMMANDS.get(code)
    return entry[1] if entry else None
