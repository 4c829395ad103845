import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sluice_client._pb.sluice.v1 import query_pb2 as _query_pb2
from sluice_client._pb.sluice.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AliasActionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALIAS_ACTION_TYPE_UNSPECIFIED: _ClassVar[AliasActionType]
    ALIAS_ACTION_TYPE_ADD: _ClassVar[AliasActionType]
    ALIAS_ACTION_TYPE_REMOVE: _ClassVar[AliasActionType]

class RefreshPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REFRESH_POLICY_UNSPECIFIED: _ClassVar[RefreshPolicy]
    REFRESH_POLICY_NONE: _ClassVar[RefreshPolicy]
    REFRESH_POLICY_IMMEDIATE: _ClassVar[RefreshPolicy]
    REFRESH_POLICY_WAIT_FOR: _ClassVar[RefreshPolicy]

class BulkAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BULK_ACTION_UNSPECIFIED: _ClassVar[BulkAction]
    BULK_ACTION_INDEX: _ClassVar[BulkAction]
    BULK_ACTION_CREATE: _ClassVar[BulkAction]
    BULK_ACTION_DELETE: _ClassVar[BulkAction]
    BULK_ACTION_UPDATE_DOC_VALUES: _ClassVar[BulkAction]
    BULK_ACTION_UPDATE: _ClassVar[BulkAction]

class BulkItemStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BULK_ITEM_STATUS_UNSPECIFIED: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_CREATED: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_UPDATED: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_DELETED: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_NOT_FOUND: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_ERROR: _ClassVar[BulkItemStatus]
    BULK_ITEM_STATUS_NOOP: _ClassVar[BulkItemStatus]

class TotalHitsRelation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOTAL_HITS_RELATION_UNSPECIFIED: _ClassVar[TotalHitsRelation]
    TOTAL_HITS_RELATION_EQ: _ClassVar[TotalHitsRelation]
    TOTAL_HITS_RELATION_GTE: _ClassVar[TotalHitsRelation]

class ReindexMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REINDEX_MODE_UNSPECIFIED: _ClassVar[ReindexMode]
    REINDEX_MODE_AUTO: _ClassVar[ReindexMode]
    REINDEX_MODE_LOCAL: _ClassVar[ReindexMode]
    REINDEX_MODE_REMOTE: _ClassVar[ReindexMode]
    REINDEX_MODE_BASELINE: _ClassVar[ReindexMode]

class ReindexCopyMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REINDEX_COPY_METHOD_UNSPECIFIED: _ClassVar[ReindexCopyMethod]
    REINDEX_COPY_METHOD_AUTO: _ClassVar[ReindexCopyMethod]
    REINDEX_COPY_METHOD_SEGMENTS: _ClassVar[ReindexCopyMethod]
    REINDEX_COPY_METHOD_DOCUMENTS: _ClassVar[ReindexCopyMethod]

class ConflictPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFLICT_POLICY_UNSPECIFIED: _ClassVar[ConflictPolicy]
    CONFLICT_POLICY_ABORT: _ClassVar[ConflictPolicy]
    CONFLICT_POLICY_PROCEED: _ClassVar[ConflictPolicy]

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATE_UNSPECIFIED: _ClassVar[TaskState]
    TASK_STATE_PENDING: _ClassVar[TaskState]
    TASK_STATE_RUNNING: _ClassVar[TaskState]
    TASK_STATE_VERIFYING: _ClassVar[TaskState]
    TASK_STATE_SUCCEEDED: _ClassVar[TaskState]
    TASK_STATE_FAILED: _ClassVar[TaskState]
    TASK_STATE_CANCELLED: _ClassVar[TaskState]

class FileVerificationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_VERIFICATION_STATUS_UNSPECIFIED: _ClassVar[FileVerificationStatus]
    FILE_VERIFICATION_STATUS_OK: _ClassVar[FileVerificationStatus]
    FILE_VERIFICATION_STATUS_CORRUPT: _ClassVar[FileVerificationStatus]
    FILE_VERIFICATION_STATUS_GONE: _ClassVar[FileVerificationStatus]
    FILE_VERIFICATION_STATUS_UNREADABLE: _ClassVar[FileVerificationStatus]

class ShardVerificationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHARD_VERIFICATION_STATUS_UNSPECIFIED: _ClassVar[ShardVerificationStatus]
    SHARD_VERIFICATION_STATUS_OK: _ClassVar[ShardVerificationStatus]
    SHARD_VERIFICATION_STATUS_DAMAGED: _ClassVar[ShardVerificationStatus]
    SHARD_VERIFICATION_STATUS_FAILED: _ClassVar[ShardVerificationStatus]
    SHARD_VERIFICATION_STATUS_UNAVAILABLE: _ClassVar[ShardVerificationStatus]
ALIAS_ACTION_TYPE_UNSPECIFIED: AliasActionType
ALIAS_ACTION_TYPE_ADD: AliasActionType
ALIAS_ACTION_TYPE_REMOVE: AliasActionType
REFRESH_POLICY_UNSPECIFIED: RefreshPolicy
REFRESH_POLICY_NONE: RefreshPolicy
REFRESH_POLICY_IMMEDIATE: RefreshPolicy
REFRESH_POLICY_WAIT_FOR: RefreshPolicy
BULK_ACTION_UNSPECIFIED: BulkAction
BULK_ACTION_INDEX: BulkAction
BULK_ACTION_CREATE: BulkAction
BULK_ACTION_DELETE: BulkAction
BULK_ACTION_UPDATE_DOC_VALUES: BulkAction
BULK_ACTION_UPDATE: BulkAction
BULK_ITEM_STATUS_UNSPECIFIED: BulkItemStatus
BULK_ITEM_STATUS_CREATED: BulkItemStatus
BULK_ITEM_STATUS_UPDATED: BulkItemStatus
BULK_ITEM_STATUS_DELETED: BulkItemStatus
BULK_ITEM_STATUS_NOT_FOUND: BulkItemStatus
BULK_ITEM_STATUS_ERROR: BulkItemStatus
BULK_ITEM_STATUS_NOOP: BulkItemStatus
TOTAL_HITS_RELATION_UNSPECIFIED: TotalHitsRelation
TOTAL_HITS_RELATION_EQ: TotalHitsRelation
TOTAL_HITS_RELATION_GTE: TotalHitsRelation
REINDEX_MODE_UNSPECIFIED: ReindexMode
REINDEX_MODE_AUTO: ReindexMode
REINDEX_MODE_LOCAL: ReindexMode
REINDEX_MODE_REMOTE: ReindexMode
REINDEX_MODE_BASELINE: ReindexMode
REINDEX_COPY_METHOD_UNSPECIFIED: ReindexCopyMethod
REINDEX_COPY_METHOD_AUTO: ReindexCopyMethod
REINDEX_COPY_METHOD_SEGMENTS: ReindexCopyMethod
REINDEX_COPY_METHOD_DOCUMENTS: ReindexCopyMethod
CONFLICT_POLICY_UNSPECIFIED: ConflictPolicy
CONFLICT_POLICY_ABORT: ConflictPolicy
CONFLICT_POLICY_PROCEED: ConflictPolicy
TASK_STATE_UNSPECIFIED: TaskState
TASK_STATE_PENDING: TaskState
TASK_STATE_RUNNING: TaskState
TASK_STATE_VERIFYING: TaskState
TASK_STATE_SUCCEEDED: TaskState
TASK_STATE_FAILED: TaskState
TASK_STATE_CANCELLED: TaskState
FILE_VERIFICATION_STATUS_UNSPECIFIED: FileVerificationStatus
FILE_VERIFICATION_STATUS_OK: FileVerificationStatus
FILE_VERIFICATION_STATUS_CORRUPT: FileVerificationStatus
FILE_VERIFICATION_STATUS_GONE: FileVerificationStatus
FILE_VERIFICATION_STATUS_UNREADABLE: FileVerificationStatus
SHARD_VERIFICATION_STATUS_UNSPECIFIED: ShardVerificationStatus
SHARD_VERIFICATION_STATUS_OK: ShardVerificationStatus
SHARD_VERIFICATION_STATUS_DAMAGED: ShardVerificationStatus
SHARD_VERIFICATION_STATUS_FAILED: ShardVerificationStatus
SHARD_VERIFICATION_STATUS_UNAVAILABLE: ShardVerificationStatus

class CreateIndexRequest(_message.Message):
    __slots__ = ("name", "settings", "mapping", "aliases", "wait_for_active_shards")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_ACTIVE_SHARDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    settings: _types_pb2.IndexSettings
    mapping: _types_pb2.Mapping
    aliases: _containers.RepeatedScalarFieldContainer[str]
    wait_for_active_shards: bool
    def __init__(self, name: _Optional[str] = ..., settings: _Optional[_Union[_types_pb2.IndexSettings, _Mapping]] = ..., mapping: _Optional[_Union[_types_pb2.Mapping, _Mapping]] = ..., aliases: _Optional[_Iterable[str]] = ..., wait_for_active_shards: _Optional[bool] = ...) -> None: ...

class CreateIndexResponse(_message.Message):
    __slots__ = ("index", "shards_acknowledged")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SHARDS_ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    index: _types_pb2.IndexInfo
    shards_acknowledged: bool
    def __init__(self, index: _Optional[_Union[_types_pb2.IndexInfo, _Mapping]] = ..., shards_acknowledged: _Optional[bool] = ...) -> None: ...

class DeleteIndexRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteIndexResponse(_message.Message):
    __slots__ = ("uuid",)
    UUID_FIELD_NUMBER: _ClassVar[int]
    uuid: str
    def __init__(self, uuid: _Optional[str] = ...) -> None: ...

class GetIndexRequest(_message.Message):
    __slots__ = ("name", "include_stats")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STATS_FIELD_NUMBER: _ClassVar[int]
    name: str
    include_stats: bool
    def __init__(self, name: _Optional[str] = ..., include_stats: _Optional[bool] = ...) -> None: ...

class GetIndexResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: _types_pb2.IndexInfo
    def __init__(self, index: _Optional[_Union[_types_pb2.IndexInfo, _Mapping]] = ...) -> None: ...

class ListIndicesRequest(_message.Message):
    __slots__ = ("prefix", "include_stats")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STATS_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    include_stats: bool
    def __init__(self, prefix: _Optional[str] = ..., include_stats: _Optional[bool] = ...) -> None: ...

class ListIndicesResponse(_message.Message):
    __slots__ = ("indices",)
    INDICES_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedCompositeFieldContainer[_types_pb2.IndexInfo]
    def __init__(self, indices: _Optional[_Iterable[_Union[_types_pb2.IndexInfo, _Mapping]]] = ...) -> None: ...

class UpdateIndexSettingsRequest(_message.Message):
    __slots__ = ("name", "settings", "update_mask")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    name: str
    settings: _types_pb2.IndexSettings
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, name: _Optional[str] = ..., settings: _Optional[_Union[_types_pb2.IndexSettings, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateIndexSettingsResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: _types_pb2.IndexInfo
    def __init__(self, index: _Optional[_Union[_types_pb2.IndexInfo, _Mapping]] = ...) -> None: ...

class PutMappingRequest(_message.Message):
    __slots__ = ("name", "mapping")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    name: str
    mapping: _types_pb2.Mapping
    def __init__(self, name: _Optional[str] = ..., mapping: _Optional[_Union[_types_pb2.Mapping, _Mapping]] = ...) -> None: ...

class PutMappingResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: _types_pb2.IndexInfo
    def __init__(self, index: _Optional[_Union[_types_pb2.IndexInfo, _Mapping]] = ...) -> None: ...

class AliasAction(_message.Message):
    __slots__ = ("type", "alias", "index", "is_write_index")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    IS_WRITE_INDEX_FIELD_NUMBER: _ClassVar[int]
    type: AliasActionType
    alias: str
    index: str
    is_write_index: bool
    def __init__(self, type: _Optional[_Union[AliasActionType, str]] = ..., alias: _Optional[str] = ..., index: _Optional[str] = ..., is_write_index: _Optional[bool] = ...) -> None: ...

class UpdateAliasesRequest(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.RepeatedCompositeFieldContainer[AliasAction]
    def __init__(self, actions: _Optional[_Iterable[_Union[AliasAction, _Mapping]]] = ...) -> None: ...

class UpdateAliasesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAliasesRequest(_message.Message):
    __slots__ = ("prefix",)
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    def __init__(self, prefix: _Optional[str] = ...) -> None: ...

class AliasInfo(_message.Message):
    __slots__ = ("alias", "indices", "write_index")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    WRITE_INDEX_FIELD_NUMBER: _ClassVar[int]
    alias: str
    indices: _containers.RepeatedScalarFieldContainer[str]
    write_index: str
    def __init__(self, alias: _Optional[str] = ..., indices: _Optional[_Iterable[str]] = ..., write_index: _Optional[str] = ...) -> None: ...

class ListAliasesResponse(_message.Message):
    __slots__ = ("aliases",)
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    aliases: _containers.RepeatedCompositeFieldContainer[AliasInfo]
    def __init__(self, aliases: _Optional[_Iterable[_Union[AliasInfo, _Mapping]]] = ...) -> None: ...

class BulkItem(_message.Message):
    __slots__ = ("action", "index", "id", "source", "routing", "upsert", "doc_as_upsert", "if_seq_no", "if_primary_term", "retry_on_conflict")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    DOC_AS_UPSERT_FIELD_NUMBER: _ClassVar[int]
    IF_SEQ_NO_FIELD_NUMBER: _ClassVar[int]
    IF_PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    RETRY_ON_CONFLICT_FIELD_NUMBER: _ClassVar[int]
    action: BulkAction
    index: str
    id: str
    source: bytes
    routing: str
    upsert: bytes
    doc_as_upsert: bool
    if_seq_no: int
    if_primary_term: int
    retry_on_conflict: int
    def __init__(self, action: _Optional[_Union[BulkAction, str]] = ..., index: _Optional[str] = ..., id: _Optional[str] = ..., source: _Optional[bytes] = ..., routing: _Optional[str] = ..., upsert: _Optional[bytes] = ..., doc_as_upsert: _Optional[bool] = ..., if_seq_no: _Optional[int] = ..., if_primary_term: _Optional[int] = ..., retry_on_conflict: _Optional[int] = ...) -> None: ...

class BulkRequest(_message.Message):
    __slots__ = ("index", "items", "refresh", "timeout")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    REFRESH_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    index: str
    items: _containers.RepeatedCompositeFieldContainer[BulkItem]
    refresh: RefreshPolicy
    timeout: _duration_pb2.Duration
    def __init__(self, index: _Optional[str] = ..., items: _Optional[_Iterable[_Union[BulkItem, _Mapping]]] = ..., refresh: _Optional[_Union[RefreshPolicy, str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class BulkItemResult(_message.Message):
    __slots__ = ("action", "index", "id", "status", "seq_no", "shard", "error", "primary_term")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEQ_NO_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    action: BulkAction
    index: str
    id: str
    status: BulkItemStatus
    seq_no: int
    shard: int
    error: _types_pb2.ErrorDetail
    primary_term: int
    def __init__(self, action: _Optional[_Union[BulkAction, str]] = ..., index: _Optional[str] = ..., id: _Optional[str] = ..., status: _Optional[_Union[BulkItemStatus, str]] = ..., seq_no: _Optional[int] = ..., shard: _Optional[int] = ..., error: _Optional[_Union[_types_pb2.ErrorDetail, _Mapping]] = ..., primary_term: _Optional[int] = ...) -> None: ...

class BulkResponse(_message.Message):
    __slots__ = ("items", "errors", "took")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    TOOK_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[BulkItemResult]
    errors: bool
    took: _duration_pb2.Duration
    def __init__(self, items: _Optional[_Iterable[_Union[BulkItemResult, _Mapping]]] = ..., errors: _Optional[bool] = ..., took: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class BulkStreamRequest(_message.Message):
    __slots__ = ("index", "items", "refresh")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    REFRESH_FIELD_NUMBER: _ClassVar[int]
    index: str
    items: _containers.RepeatedCompositeFieldContainer[BulkItem]
    refresh: RefreshPolicy
    def __init__(self, index: _Optional[str] = ..., items: _Optional[_Iterable[_Union[BulkItem, _Mapping]]] = ..., refresh: _Optional[_Union[RefreshPolicy, str]] = ...) -> None: ...

class BulkStreamResponse(_message.Message):
    __slots__ = ("total", "created", "updated", "deleted", "not_found", "failed", "failures", "took", "noop")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    TOOK_FIELD_NUMBER: _ClassVar[int]
    NOOP_FIELD_NUMBER: _ClassVar[int]
    total: int
    created: int
    updated: int
    deleted: int
    not_found: int
    failed: int
    failures: _containers.RepeatedCompositeFieldContainer[BulkStreamFailure]
    took: _duration_pb2.Duration
    noop: int
    def __init__(self, total: _Optional[int] = ..., created: _Optional[int] = ..., updated: _Optional[int] = ..., deleted: _Optional[int] = ..., not_found: _Optional[int] = ..., failed: _Optional[int] = ..., failures: _Optional[_Iterable[_Union[BulkStreamFailure, _Mapping]]] = ..., took: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., noop: _Optional[int] = ...) -> None: ...

class BulkStreamFailure(_message.Message):
    __slots__ = ("position", "result")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    position: int
    result: BulkItemResult
    def __init__(self, position: _Optional[int] = ..., result: _Optional[_Union[BulkItemResult, _Mapping]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("index", "id", "routing", "refresh")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    REFRESH_FIELD_NUMBER: _ClassVar[int]
    index: str
    id: str
    routing: str
    refresh: bool
    def __init__(self, index: _Optional[str] = ..., id: _Optional[str] = ..., routing: _Optional[str] = ..., refresh: _Optional[bool] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("found", "index", "id", "source", "routing", "seq_no", "primary_term")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    SEQ_NO_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    found: bool
    index: str
    id: str
    source: bytes
    routing: str
    seq_no: int
    primary_term: int
    def __init__(self, found: _Optional[bool] = ..., index: _Optional[str] = ..., id: _Optional[str] = ..., source: _Optional[bytes] = ..., routing: _Optional[str] = ..., seq_no: _Optional[int] = ..., primary_term: _Optional[int] = ...) -> None: ...

class PointInTime(_message.Message):
    __slots__ = ("id", "keep_alive")
    ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_ALIVE_FIELD_NUMBER: _ClassVar[int]
    id: str
    keep_alive: _duration_pb2.Duration
    def __init__(self, id: _Optional[str] = ..., keep_alive: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("indices", "query", "size", "sort", "search_after", "pit", "track_total_hits", "timeout", "fetch_source", "routing", "docvalue_fields")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_AFTER_FIELD_NUMBER: _ClassVar[int]
    PIT_FIELD_NUMBER: _ClassVar[int]
    TRACK_TOTAL_HITS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    FETCH_SOURCE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    DOCVALUE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[str]
    query: _query_pb2.Query
    size: int
    sort: _containers.RepeatedCompositeFieldContainer[_query_pb2.SortField]
    search_after: _query_pb2.SearchAfter
    pit: PointInTime
    track_total_hits: int
    timeout: _duration_pb2.Duration
    fetch_source: bool
    routing: str
    docvalue_fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, indices: _Optional[_Iterable[str]] = ..., query: _Optional[_Union[_query_pb2.Query, _Mapping]] = ..., size: _Optional[int] = ..., sort: _Optional[_Iterable[_Union[_query_pb2.SortField, _Mapping]]] = ..., search_after: _Optional[_Union[_query_pb2.SearchAfter, _Mapping]] = ..., pit: _Optional[_Union[PointInTime, _Mapping]] = ..., track_total_hits: _Optional[int] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fetch_source: _Optional[bool] = ..., routing: _Optional[str] = ..., docvalue_fields: _Optional[_Iterable[str]] = ..., **kwargs) -> None: ...

class TotalHits(_message.Message):
    __slots__ = ("value", "relation")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    value: int
    relation: TotalHitsRelation
    def __init__(self, value: _Optional[int] = ..., relation: _Optional[_Union[TotalHitsRelation, str]] = ...) -> None: ...

class Hit(_message.Message):
    __slots__ = ("index", "id", "score", "source", "sort", "shard", "routing", "fields")
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.SortValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.SortValue, _Mapping]] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SORT_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    index: str
    id: str
    score: float
    source: bytes
    sort: _containers.RepeatedCompositeFieldContainer[_types_pb2.SortValue]
    shard: int
    routing: str
    fields: _containers.MessageMap[str, _types_pb2.SortValue]
    def __init__(self, index: _Optional[str] = ..., id: _Optional[str] = ..., score: _Optional[float] = ..., source: _Optional[bytes] = ..., sort: _Optional[_Iterable[_Union[_types_pb2.SortValue, _Mapping]]] = ..., shard: _Optional[int] = ..., routing: _Optional[str] = ..., fields: _Optional[_Mapping[str, _types_pb2.SortValue]] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("total", "hits", "max_score", "shards", "timed_out", "took", "pit_id")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MAX_SCORE_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    TOOK_FIELD_NUMBER: _ClassVar[int]
    PIT_ID_FIELD_NUMBER: _ClassVar[int]
    total: TotalHits
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    max_score: float
    shards: _types_pb2.ShardsSummary
    timed_out: bool
    took: _duration_pb2.Duration
    pit_id: str
    def __init__(self, total: _Optional[_Union[TotalHits, _Mapping]] = ..., hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ..., max_score: _Optional[float] = ..., shards: _Optional[_Union[_types_pb2.ShardsSummary, _Mapping]] = ..., timed_out: _Optional[bool] = ..., took: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., pit_id: _Optional[str] = ...) -> None: ...

class OpenPointInTimeRequest(_message.Message):
    __slots__ = ("indices", "keep_alive")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    KEEP_ALIVE_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[str]
    keep_alive: _duration_pb2.Duration
    def __init__(self, indices: _Optional[_Iterable[str]] = ..., keep_alive: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class OpenPointInTimeResponse(_message.Message):
    __slots__ = ("id", "shards")
    ID_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    shards: _types_pb2.ShardsSummary
    def __init__(self, id: _Optional[str] = ..., shards: _Optional[_Union[_types_pb2.ShardsSummary, _Mapping]] = ...) -> None: ...

class ClosePointInTimeRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ClosePointInTimeResponse(_message.Message):
    __slots__ = ("succeeded",)
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    succeeded: bool
    def __init__(self, succeeded: _Optional[bool] = ...) -> None: ...

class Slice(_message.Message):
    __slots__ = ("id", "max")
    ID_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    id: int
    max: int
    def __init__(self, id: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class ScrollRequest(_message.Message):
    __slots__ = ("indices", "pit", "query", "slice", "batch_size", "cursor", "fetch_source")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    PIT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SLICE_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    FETCH_SOURCE_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[str]
    pit: PointInTime
    query: _query_pb2.Query
    slice: Slice
    batch_size: int
    cursor: bytes
    fetch_source: bool
    def __init__(self, indices: _Optional[_Iterable[str]] = ..., pit: _Optional[_Union[PointInTime, _Mapping]] = ..., query: _Optional[_Union[_query_pb2.Query, _Mapping]] = ..., slice: _Optional[_Union[Slice, _Mapping]] = ..., batch_size: _Optional[int] = ..., cursor: _Optional[bytes] = ..., fetch_source: _Optional[bool] = ...) -> None: ...

class ScrollDoc(_message.Message):
    __slots__ = ("index", "id", "source", "routing")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    index: str
    id: str
    source: bytes
    routing: str
    def __init__(self, index: _Optional[str] = ..., id: _Optional[str] = ..., source: _Optional[bytes] = ..., routing: _Optional[str] = ...) -> None: ...

class ScrollResponse(_message.Message):
    __slots__ = ("docs", "cursor", "total")
    DOCS_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    docs: _containers.RepeatedCompositeFieldContainer[ScrollDoc]
    cursor: bytes
    total: int
    def __init__(self, docs: _Optional[_Iterable[_Union[ScrollDoc, _Mapping]]] = ..., cursor: _Optional[bytes] = ..., total: _Optional[int] = ...) -> None: ...

class RefreshRequest(_message.Message):
    __slots__ = ("indices",)
    INDICES_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, indices: _Optional[_Iterable[str]] = ...) -> None: ...

class RefreshResponse(_message.Message):
    __slots__ = ("shards",)
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    shards: _types_pb2.ShardsSummary
    def __init__(self, shards: _Optional[_Union[_types_pb2.ShardsSummary, _Mapping]] = ...) -> None: ...

class ReindexSource(_message.Message):
    __slots__ = ("index", "query")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    index: str
    query: _query_pb2.Query
    def __init__(self, index: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.Query, _Mapping]] = ...) -> None: ...

class ReindexDestination(_message.Message):
    __slots__ = ("index", "settings", "mapping", "op_type", "routing")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    index: str
    settings: _types_pb2.IndexSettings
    mapping: _types_pb2.Mapping
    op_type: BulkAction
    routing: str
    def __init__(self, index: _Optional[str] = ..., settings: _Optional[_Union[_types_pb2.IndexSettings, _Mapping]] = ..., mapping: _Optional[_Union[_types_pb2.Mapping, _Mapping]] = ..., op_type: _Optional[_Union[BulkAction, str]] = ..., routing: _Optional[str] = ...) -> None: ...

class ReindexRequest(_message.Message):
    __slots__ = ("source", "dest", "slices", "requests_per_second", "conflicts", "max_docs", "swap_alias", "mode", "wait_for_completion", "copy_method")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEST_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    MAX_DOCS_FIELD_NUMBER: _ClassVar[int]
    SWAP_ALIAS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    COPY_METHOD_FIELD_NUMBER: _ClassVar[int]
    source: ReindexSource
    dest: ReindexDestination
    slices: int
    requests_per_second: float
    conflicts: ConflictPolicy
    max_docs: int
    swap_alias: str
    mode: ReindexMode
    wait_for_completion: bool
    copy_method: ReindexCopyMethod
    def __init__(self, source: _Optional[_Union[ReindexSource, _Mapping]] = ..., dest: _Optional[_Union[ReindexDestination, _Mapping]] = ..., slices: _Optional[int] = ..., requests_per_second: _Optional[float] = ..., conflicts: _Optional[_Union[ConflictPolicy, str]] = ..., max_docs: _Optional[int] = ..., swap_alias: _Optional[str] = ..., mode: _Optional[_Union[ReindexMode, str]] = ..., wait_for_completion: _Optional[bool] = ..., copy_method: _Optional[_Union[ReindexCopyMethod, str]] = ...) -> None: ...

class UpdateByQueryRequest(_message.Message):
    __slots__ = ("index", "query", "doc_values", "slices", "requests_per_second", "conflicts", "max_docs", "wait_for_completion")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOC_VALUES_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    MAX_DOCS_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    index: str
    query: _query_pb2.Query
    doc_values: bytes
    slices: int
    requests_per_second: float
    conflicts: ConflictPolicy
    max_docs: int
    wait_for_completion: bool
    def __init__(self, index: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.Query, _Mapping]] = ..., doc_values: _Optional[bytes] = ..., slices: _Optional[int] = ..., requests_per_second: _Optional[float] = ..., conflicts: _Optional[_Union[ConflictPolicy, str]] = ..., max_docs: _Optional[int] = ..., wait_for_completion: _Optional[bool] = ...) -> None: ...

class UpdateByQueryResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class ReindexResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class SliceStatus(_message.Message):
    __slots__ = ("slice", "source_shard", "node_id", "state", "total", "copied", "restarts", "copy_method")
    SLICE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHARD_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    COPIED_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    COPY_METHOD_FIELD_NUMBER: _ClassVar[int]
    slice: int
    source_shard: int
    node_id: str
    state: TaskState
    total: int
    copied: int
    restarts: int
    copy_method: ReindexCopyMethod
    def __init__(self, slice: _Optional[int] = ..., source_shard: _Optional[int] = ..., node_id: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., total: _Optional[int] = ..., copied: _Optional[int] = ..., restarts: _Optional[int] = ..., copy_method: _Optional[_Union[ReindexCopyMethod, str]] = ...) -> None: ...

class ReindexStatus(_message.Message):
    __slots__ = ("total", "created", "updated", "version_conflicts", "failures", "docs_per_second", "requests_per_second", "throttled", "eta", "mode", "slices", "source_index", "dest_index", "failure_samples", "copy_method", "copy_method_reason")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    VERSION_CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    DOCS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    THROTTLED_FIELD_NUMBER: _ClassVar[int]
    ETA_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEST_INDEX_FIELD_NUMBER: _ClassVar[int]
    FAILURE_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    COPY_METHOD_FIELD_NUMBER: _ClassVar[int]
    COPY_METHOD_REASON_FIELD_NUMBER: _ClassVar[int]
    total: int
    created: int
    updated: int
    version_conflicts: int
    failures: int
    docs_per_second: float
    requests_per_second: float
    throttled: _duration_pb2.Duration
    eta: _duration_pb2.Duration
    mode: ReindexMode
    slices: _containers.RepeatedCompositeFieldContainer[SliceStatus]
    source_index: str
    dest_index: str
    failure_samples: _containers.RepeatedCompositeFieldContainer[_types_pb2.ShardFailure]
    copy_method: ReindexCopyMethod
    copy_method_reason: str
    def __init__(self, total: _Optional[int] = ..., created: _Optional[int] = ..., updated: _Optional[int] = ..., version_conflicts: _Optional[int] = ..., failures: _Optional[int] = ..., docs_per_second: _Optional[float] = ..., requests_per_second: _Optional[float] = ..., throttled: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., eta: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., mode: _Optional[_Union[ReindexMode, str]] = ..., slices: _Optional[_Iterable[_Union[SliceStatus, _Mapping]]] = ..., source_index: _Optional[str] = ..., dest_index: _Optional[str] = ..., failure_samples: _Optional[_Iterable[_Union[_types_pb2.ShardFailure, _Mapping]]] = ..., copy_method: _Optional[_Union[ReindexCopyMethod, str]] = ..., copy_method_reason: _Optional[str] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "type", "description", "state", "start_time", "end_time", "error", "reindex")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REINDEX_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    description: str
    state: TaskState
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    error: _types_pb2.ErrorDetail
    reindex: ReindexStatus
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., description: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[_Union[_types_pb2.ErrorDetail, _Mapping]] = ..., reindex: _Optional[_Union[ReindexStatus, _Mapping]] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ("id", "wait_for_completion", "timeout")
    ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    id: str
    wait_for_completion: bool
    timeout: _duration_pb2.Duration
    def __init__(self, id: _Optional[str] = ..., wait_for_completion: _Optional[bool] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("states",)
    STATES_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedScalarFieldContainer[TaskState]
    def __init__(self, states: _Optional[_Iterable[_Union[TaskState, str]]] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class RethrottleTaskRequest(_message.Message):
    __slots__ = ("id", "requests_per_second")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    id: str
    requests_per_second: float
    def __init__(self, id: _Optional[str] = ..., requests_per_second: _Optional[float] = ...) -> None: ...

class RethrottleTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class ClusterHealthRequest(_message.Message):
    __slots__ = ("indices", "wait_for_status", "timeout")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    indices: _containers.RepeatedScalarFieldContainer[str]
    wait_for_status: _types_pb2.HealthStatus
    timeout: _duration_pb2.Duration
    def __init__(self, indices: _Optional[_Iterable[str]] = ..., wait_for_status: _Optional[_Union[_types_pb2.HealthStatus, str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class IndexHealth(_message.Message):
    __slots__ = ("index", "status", "active_primary_shards", "unassigned_shards", "shards", "active_shards", "initializing_shards", "write_block", "relocating_shards")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_PRIMARY_SHARDS_FIELD_NUMBER: _ClassVar[int]
    UNASSIGNED_SHARDS_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SHARDS_FIELD_NUMBER: _ClassVar[int]
    INITIALIZING_SHARDS_FIELD_NUMBER: _ClassVar[int]
    WRITE_BLOCK_FIELD_NUMBER: _ClassVar[int]
    RELOCATING_SHARDS_FIELD_NUMBER: _ClassVar[int]
    index: str
    status: _types_pb2.HealthStatus
    active_primary_shards: int
    unassigned_shards: int
    shards: _containers.RepeatedCompositeFieldContainer[_types_pb2.ShardRouting]
    active_shards: int
    initializing_shards: int
    write_block: str
    relocating_shards: int
    def __init__(self, index: _Optional[str] = ..., status: _Optional[_Union[_types_pb2.HealthStatus, str]] = ..., active_primary_shards: _Optional[int] = ..., unassigned_shards: _Optional[int] = ..., shards: _Optional[_Iterable[_Union[_types_pb2.ShardRouting, _Mapping]]] = ..., active_shards: _Optional[int] = ..., initializing_shards: _Optional[int] = ..., write_block: _Optional[str] = ..., relocating_shards: _Optional[int] = ...) -> None: ...

class ClusterHealthResponse(_message.Message):
    __slots__ = ("status", "number_of_data_nodes", "indices", "timed_out", "cluster_name", "reason", "disk_watermark_nodes", "relocating_shards")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DATA_NODES_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DISK_WATERMARK_NODES_FIELD_NUMBER: _ClassVar[int]
    RELOCATING_SHARDS_FIELD_NUMBER: _ClassVar[int]
    status: _types_pb2.HealthStatus
    number_of_data_nodes: int
    indices: _containers.RepeatedCompositeFieldContainer[IndexHealth]
    timed_out: bool
    cluster_name: str
    reason: str
    disk_watermark_nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    relocating_shards: int
    def __init__(self, status: _Optional[_Union[_types_pb2.HealthStatus, str]] = ..., number_of_data_nodes: _Optional[int] = ..., indices: _Optional[_Iterable[_Union[IndexHealth, _Mapping]]] = ..., timed_out: _Optional[bool] = ..., cluster_name: _Optional[str] = ..., reason: _Optional[str] = ..., disk_watermark_nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., relocating_shards: _Optional[int] = ...) -> None: ...

class ClusterStateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("id", "address", "zone", "disk_free_bytes", "disk_total_bytes", "live", "version", "disk_watermark", "disk_reason", "data_path", "draining", "copies", "shutting_down")
    ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    DISK_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DISK_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    DISK_REASON_FIELD_NUMBER: _ClassVar[int]
    DATA_PATH_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    SHUTTING_DOWN_FIELD_NUMBER: _ClassVar[int]
    id: str
    address: str
    zone: str
    disk_free_bytes: int
    disk_total_bytes: int
    live: bool
    version: str
    disk_watermark: _types_pb2.DiskWatermark
    disk_reason: str
    data_path: str
    draining: bool
    copies: int
    shutting_down: bool
    def __init__(self, id: _Optional[str] = ..., address: _Optional[str] = ..., zone: _Optional[str] = ..., disk_free_bytes: _Optional[int] = ..., disk_total_bytes: _Optional[int] = ..., live: _Optional[bool] = ..., version: _Optional[str] = ..., disk_watermark: _Optional[_Union[_types_pb2.DiskWatermark, str]] = ..., disk_reason: _Optional[str] = ..., data_path: _Optional[str] = ..., draining: _Optional[bool] = ..., copies: _Optional[int] = ..., shutting_down: _Optional[bool] = ...) -> None: ...

class ClusterStateResponse(_message.Message):
    __slots__ = ("cluster_name", "nodes", "indices", "aliases", "allocator", "revision", "settings")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    indices: _containers.RepeatedCompositeFieldContainer[_types_pb2.IndexInfo]
    aliases: _containers.RepeatedCompositeFieldContainer[AliasInfo]
    allocator: str
    revision: int
    settings: _types_pb2.ClusterSettings
    def __init__(self, cluster_name: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., indices: _Optional[_Iterable[_Union[_types_pb2.IndexInfo, _Mapping]]] = ..., aliases: _Optional[_Iterable[_Union[AliasInfo, _Mapping]]] = ..., allocator: _Optional[str] = ..., revision: _Optional[int] = ..., settings: _Optional[_Union[_types_pb2.ClusterSettings, _Mapping]] = ...) -> None: ...

class GetClusterSettingsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterSettingsResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: _types_pb2.ClusterSettings
    def __init__(self, settings: _Optional[_Union[_types_pb2.ClusterSettings, _Mapping]] = ...) -> None: ...

class UpdateClusterSettingsRequest(_message.Message):
    __slots__ = ("settings", "update_mask")
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    settings: _types_pb2.ClusterSettings
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, settings: _Optional[_Union[_types_pb2.ClusterSettings, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class DrainNodeRequest(_message.Message):
    __slots__ = ("node_id", "undrain")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    UNDRAIN_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    undrain: bool
    def __init__(self, node_id: _Optional[str] = ..., undrain: _Optional[bool] = ...) -> None: ...

class DrainNodeResponse(_message.Message):
    __slots__ = ("node_id", "draining", "copies", "live")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    draining: bool
    copies: int
    live: bool
    def __init__(self, node_id: _Optional[str] = ..., draining: _Optional[bool] = ..., copies: _Optional[int] = ..., live: _Optional[bool] = ...) -> None: ...

class UpdateClusterSettingsResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: _types_pb2.ClusterSettings
    def __init__(self, settings: _Optional[_Union[_types_pb2.ClusterSettings, _Mapping]] = ...) -> None: ...

class VerifyIndexRequest(_message.Message):
    __slots__ = ("index", "shard", "deep", "max_bytes_per_sec")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    DEEP_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_PER_SEC_FIELD_NUMBER: _ClassVar[int]
    index: str
    shard: int
    deep: bool
    max_bytes_per_sec: int
    def __init__(self, index: _Optional[str] = ..., shard: _Optional[int] = ..., deep: _Optional[bool] = ..., max_bytes_per_sec: _Optional[int] = ...) -> None: ...

class FileVerification(_message.Message):
    __slots__ = ("name", "bytes", "status", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    bytes: int
    status: FileVerificationStatus
    error: str
    def __init__(self, name: _Optional[str] = ..., bytes: _Optional[int] = ..., status: _Optional[_Union[FileVerificationStatus, str]] = ..., error: _Optional[str] = ...) -> None: ...

class SegmentVerification(_message.Message):
    __slots__ = ("name", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    error: str
    def __init__(self, name: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ShardVerification(_message.Message):
    __slots__ = ("index", "shard", "node_id", "primary", "status", "files", "segments", "bytes", "took", "failure", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    TOOK_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: str
    shard: int
    node_id: str
    primary: bool
    status: ShardVerificationStatus
    files: _containers.RepeatedCompositeFieldContainer[FileVerification]
    segments: _containers.RepeatedCompositeFieldContainer[SegmentVerification]
    bytes: int
    took: _duration_pb2.Duration
    failure: str
    error: _types_pb2.ErrorDetail
    def __init__(self, index: _Optional[str] = ..., shard: _Optional[int] = ..., node_id: _Optional[str] = ..., primary: _Optional[bool] = ..., status: _Optional[_Union[ShardVerificationStatus, str]] = ..., files: _Optional[_Iterable[_Union[FileVerification, _Mapping]]] = ..., segments: _Optional[_Iterable[_Union[SegmentVerification, _Mapping]]] = ..., bytes: _Optional[int] = ..., took: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., failure: _Optional[str] = ..., error: _Optional[_Union[_types_pb2.ErrorDetail, _Mapping]] = ...) -> None: ...

class VerifyIndexResponse(_message.Message):
    __slots__ = ("shards",)
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    shards: _containers.RepeatedCompositeFieldContainer[ShardVerification]
    def __init__(self, shards: _Optional[_Iterable[_Union[ShardVerification, _Mapping]]] = ...) -> None: ...
