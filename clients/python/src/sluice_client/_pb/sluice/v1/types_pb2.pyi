import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FieldType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FIELD_TYPE_UNSPECIFIED: _ClassVar[FieldType]
    FIELD_TYPE_TEXT: _ClassVar[FieldType]
    FIELD_TYPE_KEYWORD: _ClassVar[FieldType]
    FIELD_TYPE_LONG: _ClassVar[FieldType]
    FIELD_TYPE_DOUBLE: _ClassVar[FieldType]
    FIELD_TYPE_DATE: _ClassVar[FieldType]
    FIELD_TYPE_BOOLEAN: _ClassVar[FieldType]

class DynamicMapping(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DYNAMIC_MAPPING_UNSPECIFIED: _ClassVar[DynamicMapping]
    DYNAMIC_MAPPING_TRUE: _ClassVar[DynamicMapping]
    DYNAMIC_MAPPING_FALSE: _ClassVar[DynamicMapping]
    DYNAMIC_MAPPING_STRICT: _ClassVar[DynamicMapping]

class TranslogDurability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSLOG_DURABILITY_UNSPECIFIED: _ClassVar[TranslogDurability]
    TRANSLOG_DURABILITY_REQUEST: _ClassVar[TranslogDurability]
    TRANSLOG_DURABILITY_ASYNC: _ClassVar[TranslogDurability]

class IndexState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEX_STATE_UNSPECIFIED: _ClassVar[IndexState]
    INDEX_STATE_CREATING: _ClassVar[IndexState]
    INDEX_STATE_OPEN: _ClassVar[IndexState]
    INDEX_STATE_DELETING: _ClassVar[IndexState]

class HealthStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HEALTH_STATUS_UNSPECIFIED: _ClassVar[HealthStatus]
    HEALTH_STATUS_GREEN: _ClassVar[HealthStatus]
    HEALTH_STATUS_YELLOW: _ClassVar[HealthStatus]
    HEALTH_STATUS_RED: _ClassVar[HealthStatus]

class ShardState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHARD_STATE_UNSPECIFIED: _ClassVar[ShardState]
    SHARD_STATE_UNASSIGNED: _ClassVar[ShardState]
    SHARD_STATE_INITIALIZING: _ClassVar[ShardState]
    SHARD_STATE_STARTED: _ClassVar[ShardState]
    SHARD_STATE_NODE_LEFT: _ClassVar[ShardState]
    SHARD_STATE_FAILED: _ClassVar[ShardState]

class RecoveryStage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECOVERY_STAGE_UNSPECIFIED: _ClassVar[RecoveryStage]
    RECOVERY_STAGE_QUEUED: _ClassVar[RecoveryStage]
    RECOVERY_STAGE_LOADING: _ClassVar[RecoveryStage]
    RECOVERY_STAGE_SCANNING_TRANSLOG: _ClassVar[RecoveryStage]
    RECOVERY_STAGE_REPLAYING_TRANSLOG: _ClassVar[RecoveryStage]
    RECOVERY_STAGE_REFRESHING: _ClassVar[RecoveryStage]

class DiskWatermark(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISK_WATERMARK_UNSPECIFIED: _ClassVar[DiskWatermark]
    DISK_WATERMARK_OK: _ClassVar[DiskWatermark]
    DISK_WATERMARK_LOW: _ClassVar[DiskWatermark]
    DISK_WATERMARK_HIGH: _ClassVar[DiskWatermark]
    DISK_WATERMARK_FLOOD_STAGE: _ClassVar[DiskWatermark]
FIELD_TYPE_UNSPECIFIED: FieldType
FIELD_TYPE_TEXT: FieldType
FIELD_TYPE_KEYWORD: FieldType
FIELD_TYPE_LONG: FieldType
FIELD_TYPE_DOUBLE: FieldType
FIELD_TYPE_DATE: FieldType
FIELD_TYPE_BOOLEAN: FieldType
DYNAMIC_MAPPING_UNSPECIFIED: DynamicMapping
DYNAMIC_MAPPING_TRUE: DynamicMapping
DYNAMIC_MAPPING_FALSE: DynamicMapping
DYNAMIC_MAPPING_STRICT: DynamicMapping
TRANSLOG_DURABILITY_UNSPECIFIED: TranslogDurability
TRANSLOG_DURABILITY_REQUEST: TranslogDurability
TRANSLOG_DURABILITY_ASYNC: TranslogDurability
INDEX_STATE_UNSPECIFIED: IndexState
INDEX_STATE_CREATING: IndexState
INDEX_STATE_OPEN: IndexState
INDEX_STATE_DELETING: IndexState
HEALTH_STATUS_UNSPECIFIED: HealthStatus
HEALTH_STATUS_GREEN: HealthStatus
HEALTH_STATUS_YELLOW: HealthStatus
HEALTH_STATUS_RED: HealthStatus
SHARD_STATE_UNSPECIFIED: ShardState
SHARD_STATE_UNASSIGNED: ShardState
SHARD_STATE_INITIALIZING: ShardState
SHARD_STATE_STARTED: ShardState
SHARD_STATE_NODE_LEFT: ShardState
SHARD_STATE_FAILED: ShardState
RECOVERY_STAGE_UNSPECIFIED: RecoveryStage
RECOVERY_STAGE_QUEUED: RecoveryStage
RECOVERY_STAGE_LOADING: RecoveryStage
RECOVERY_STAGE_SCANNING_TRANSLOG: RecoveryStage
RECOVERY_STAGE_REPLAYING_TRANSLOG: RecoveryStage
RECOVERY_STAGE_REFRESHING: RecoveryStage
DISK_WATERMARK_UNSPECIFIED: DiskWatermark
DISK_WATERMARK_OK: DiskWatermark
DISK_WATERMARK_LOW: DiskWatermark
DISK_WATERMARK_HIGH: DiskWatermark
DISK_WATERMARK_FLOOD_STAGE: DiskWatermark

class FieldMapping(_message.Message):
    __slots__ = ("type", "analyzer", "index", "doc_values")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ANALYZER_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DOC_VALUES_FIELD_NUMBER: _ClassVar[int]
    type: FieldType
    analyzer: str
    index: bool
    doc_values: bool
    def __init__(self, type: _Optional[_Union[FieldType, str]] = ..., analyzer: _Optional[str] = ..., index: _Optional[bool] = ..., doc_values: _Optional[bool] = ...) -> None: ...

class Mapping(_message.Message):
    __slots__ = ("properties", "dynamic")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: FieldMapping
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[FieldMapping, _Mapping]] = ...) -> None: ...
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_FIELD_NUMBER: _ClassVar[int]
    properties: _containers.MessageMap[str, FieldMapping]
    dynamic: DynamicMapping
    def __init__(self, properties: _Optional[_Mapping[str, FieldMapping]] = ..., dynamic: _Optional[_Union[DynamicMapping, str]] = ...) -> None: ...

class IndexSettings(_message.Message):
    __slots__ = ("number_of_shards", "number_of_routing_shards", "number_of_replicas", "refresh_interval", "translog_durability", "translog_sync_interval", "merge_max_mb_per_sec", "indexing_buffer_bytes", "mapping_total_fields_limit", "mapping_depth_limit", "mapping_field_name_length_limit", "node_left_delayed_timeout")
    NUMBER_OF_SHARDS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_ROUTING_SHARDS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REFRESH_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    TRANSLOG_DURABILITY_FIELD_NUMBER: _ClassVar[int]
    TRANSLOG_SYNC_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MERGE_MAX_MB_PER_SEC_FIELD_NUMBER: _ClassVar[int]
    INDEXING_BUFFER_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAPPING_TOTAL_FIELDS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAPPING_DEPTH_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NAME_LENGTH_LIMIT_FIELD_NUMBER: _ClassVar[int]
    NODE_LEFT_DELAYED_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    number_of_shards: int
    number_of_routing_shards: int
    number_of_replicas: int
    refresh_interval: _duration_pb2.Duration
    translog_durability: TranslogDurability
    translog_sync_interval: _duration_pb2.Duration
    merge_max_mb_per_sec: float
    indexing_buffer_bytes: int
    mapping_total_fields_limit: int
    mapping_depth_limit: int
    mapping_field_name_length_limit: int
    node_left_delayed_timeout: _duration_pb2.Duration
    def __init__(self, number_of_shards: _Optional[int] = ..., number_of_routing_shards: _Optional[int] = ..., number_of_replicas: _Optional[int] = ..., refresh_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., translog_durability: _Optional[_Union[TranslogDurability, str]] = ..., translog_sync_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., merge_max_mb_per_sec: _Optional[float] = ..., indexing_buffer_bytes: _Optional[int] = ..., mapping_total_fields_limit: _Optional[int] = ..., mapping_depth_limit: _Optional[int] = ..., mapping_field_name_length_limit: _Optional[int] = ..., node_left_delayed_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ShardRouting(_message.Message):
    __slots__ = ("shard", "node_id", "primary", "state", "allocation_id", "reason", "recovery", "primary_term", "in_sync", "relocating_from_node", "move")
    SHARD_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    IN_SYNC_FIELD_NUMBER: _ClassVar[int]
    RELOCATING_FROM_NODE_FIELD_NUMBER: _ClassVar[int]
    MOVE_FIELD_NUMBER: _ClassVar[int]
    shard: int
    node_id: str
    primary: bool
    state: ShardState
    allocation_id: str
    reason: str
    recovery: ShardRecovery
    primary_term: int
    in_sync: bool
    relocating_from_node: str
    move: str
    def __init__(self, shard: _Optional[int] = ..., node_id: _Optional[str] = ..., primary: _Optional[bool] = ..., state: _Optional[_Union[ShardState, str]] = ..., allocation_id: _Optional[str] = ..., reason: _Optional[str] = ..., recovery: _Optional[_Union[ShardRecovery, _Mapping]] = ..., primary_term: _Optional[int] = ..., in_sync: _Optional[bool] = ..., relocating_from_node: _Optional[str] = ..., move: _Optional[str] = ...) -> None: ...

class ShardRecovery(_message.Message):
    __slots__ = ("stage", "ops", "ops_total", "bytes", "bytes_total", "elapsed")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    OPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_FIELD_NUMBER: _ClassVar[int]
    stage: RecoveryStage
    ops: int
    ops_total: int
    bytes: int
    bytes_total: int
    elapsed: _duration_pb2.Duration
    def __init__(self, stage: _Optional[_Union[RecoveryStage, str]] = ..., ops: _Optional[int] = ..., ops_total: _Optional[int] = ..., bytes: _Optional[int] = ..., bytes_total: _Optional[int] = ..., elapsed: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class IndexInfo(_message.Message):
    __slots__ = ("name", "uuid", "settings", "mapping", "aliases", "state", "creation_time", "health", "docs_count", "store_size_bytes", "shards", "write_block")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIME_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    DOCS_COUNT_FIELD_NUMBER: _ClassVar[int]
    STORE_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    WRITE_BLOCK_FIELD_NUMBER: _ClassVar[int]
    name: str
    uuid: str
    settings: IndexSettings
    mapping: Mapping
    aliases: _containers.RepeatedScalarFieldContainer[str]
    state: IndexState
    creation_time: _timestamp_pb2.Timestamp
    health: HealthStatus
    docs_count: int
    store_size_bytes: int
    shards: _containers.RepeatedCompositeFieldContainer[ShardRouting]
    write_block: str
    def __init__(self, name: _Optional[str] = ..., uuid: _Optional[str] = ..., settings: _Optional[_Union[IndexSettings, _Mapping]] = ..., mapping: _Optional[_Union[Mapping, _Mapping]] = ..., aliases: _Optional[_Iterable[str]] = ..., state: _Optional[_Union[IndexState, str]] = ..., creation_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., health: _Optional[_Union[HealthStatus, str]] = ..., docs_count: _Optional[int] = ..., store_size_bytes: _Optional[int] = ..., shards: _Optional[_Iterable[_Union[ShardRouting, _Mapping]]] = ..., write_block: _Optional[str] = ...) -> None: ...

class ClusterSettings(_message.Message):
    __slots__ = ("disk_watermark_low", "disk_watermark_high", "disk_watermark_flood_stage", "drained_nodes", "max_concurrent_rebalance", "rebalance_enable")
    DISK_WATERMARK_LOW_FIELD_NUMBER: _ClassVar[int]
    DISK_WATERMARK_HIGH_FIELD_NUMBER: _ClassVar[int]
    DISK_WATERMARK_FLOOD_STAGE_FIELD_NUMBER: _ClassVar[int]
    DRAINED_NODES_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_REBALANCE_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_ENABLE_FIELD_NUMBER: _ClassVar[int]
    disk_watermark_low: str
    disk_watermark_high: str
    disk_watermark_flood_stage: str
    drained_nodes: _containers.RepeatedScalarFieldContainer[str]
    max_concurrent_rebalance: int
    rebalance_enable: str
    def __init__(self, disk_watermark_low: _Optional[str] = ..., disk_watermark_high: _Optional[str] = ..., disk_watermark_flood_stage: _Optional[str] = ..., drained_nodes: _Optional[_Iterable[str]] = ..., max_concurrent_rebalance: _Optional[int] = ..., rebalance_enable: _Optional[str] = ...) -> None: ...

class FieldValue(_message.Message):
    __slots__ = ("string_value", "long_value", "double_value", "bool_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    LONG_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    long_value: int
    double_value: float
    bool_value: bool
    def __init__(self, string_value: _Optional[str] = ..., long_value: _Optional[int] = ..., double_value: _Optional[float] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class SortValue(_message.Message):
    __slots__ = ("score", "long_value", "double_value", "keyword_value")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    LONG_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_VALUE_FIELD_NUMBER: _ClassVar[int]
    score: float
    long_value: int
    double_value: float
    keyword_value: bytes
    def __init__(self, score: _Optional[float] = ..., long_value: _Optional[int] = ..., double_value: _Optional[float] = ..., keyword_value: _Optional[bytes] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ("code", "reason", "field", "retry_delay")
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_FIELD_NUMBER: _ClassVar[int]
    code: int
    reason: str
    field: str
    retry_delay: _duration_pb2.Duration
    def __init__(self, code: _Optional[int] = ..., reason: _Optional[str] = ..., field: _Optional[str] = ..., retry_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ShardFailure(_message.Message):
    __slots__ = ("index", "shard", "node_id", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: str
    shard: int
    node_id: str
    error: ErrorDetail
    def __init__(self, index: _Optional[str] = ..., shard: _Optional[int] = ..., node_id: _Optional[str] = ..., error: _Optional[_Union[ErrorDetail, _Mapping]] = ...) -> None: ...

class ShardsSummary(_message.Message):
    __slots__ = ("total", "successful", "failed", "failures")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    SUCCESSFUL_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    total: int
    successful: int
    failed: int
    failures: _containers.RepeatedCompositeFieldContainer[ShardFailure]
    def __init__(self, total: _Optional[int] = ..., successful: _Optional[int] = ..., failed: _Optional[int] = ..., failures: _Optional[_Iterable[_Union[ShardFailure, _Mapping]]] = ...) -> None: ...
