from sluice_client._pb.sluice.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MatchOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_OPERATOR_UNSPECIFIED: _ClassVar[MatchOperator]
    MATCH_OPERATOR_OR: _ClassVar[MatchOperator]
    MATCH_OPERATOR_AND: _ClassVar[MatchOperator]

class SortOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SORT_ORDER_UNSPECIFIED: _ClassVar[SortOrder]
    SORT_ORDER_ASC: _ClassVar[SortOrder]
    SORT_ORDER_DESC: _ClassVar[SortOrder]
MATCH_OPERATOR_UNSPECIFIED: MatchOperator
MATCH_OPERATOR_OR: MatchOperator
MATCH_OPERATOR_AND: MatchOperator
SORT_ORDER_UNSPECIFIED: SortOrder
SORT_ORDER_ASC: SortOrder
SORT_ORDER_DESC: SortOrder

class Query(_message.Message):
    __slots__ = ("match_all", "match", "term", "terms", "bool", "range", "phrase", "ids")
    MATCH_ALL_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    PHRASE_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    match_all: MatchAllQuery
    match: MatchQuery
    term: TermQuery
    terms: TermsQuery
    bool: BoolQuery
    range: RangeQuery
    phrase: PhraseQuery
    ids: IdsQuery
    def __init__(self, match_all: _Optional[_Union[MatchAllQuery, _Mapping]] = ..., match: _Optional[_Union[MatchQuery, _Mapping]] = ..., term: _Optional[_Union[TermQuery, _Mapping]] = ..., terms: _Optional[_Union[TermsQuery, _Mapping]] = ..., bool: _Optional[_Union[BoolQuery, _Mapping]] = ..., range: _Optional[_Union[RangeQuery, _Mapping]] = ..., phrase: _Optional[_Union[PhraseQuery, _Mapping]] = ..., ids: _Optional[_Union[IdsQuery, _Mapping]] = ...) -> None: ...

class MatchAllQuery(_message.Message):
    __slots__ = ("boost",)
    BOOST_FIELD_NUMBER: _ClassVar[int]
    boost: float
    def __init__(self, boost: _Optional[float] = ...) -> None: ...

class MatchQuery(_message.Message):
    __slots__ = ("field", "query", "operator", "minimum_should_match", "boost")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_SHOULD_MATCH_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    field: str
    query: str
    operator: MatchOperator
    minimum_should_match: str
    boost: float
    def __init__(self, field: _Optional[str] = ..., query: _Optional[str] = ..., operator: _Optional[_Union[MatchOperator, str]] = ..., minimum_should_match: _Optional[str] = ..., boost: _Optional[float] = ...) -> None: ...

class TermQuery(_message.Message):
    __slots__ = ("field", "value", "boost")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    field: str
    value: _types_pb2.FieldValue
    boost: float
    def __init__(self, field: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ..., boost: _Optional[float] = ...) -> None: ...

class TermsQuery(_message.Message):
    __slots__ = ("field", "values", "boost")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    field: str
    values: _containers.RepeatedCompositeFieldContainer[_types_pb2.FieldValue]
    boost: float
    def __init__(self, field: _Optional[str] = ..., values: _Optional[_Iterable[_Union[_types_pb2.FieldValue, _Mapping]]] = ..., boost: _Optional[float] = ...) -> None: ...

class BoolQuery(_message.Message):
    __slots__ = ("must", "should", "must_not", "filter", "minimum_should_match", "boost")
    MUST_FIELD_NUMBER: _ClassVar[int]
    SHOULD_FIELD_NUMBER: _ClassVar[int]
    MUST_NOT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_SHOULD_MATCH_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    must: _containers.RepeatedCompositeFieldContainer[Query]
    should: _containers.RepeatedCompositeFieldContainer[Query]
    must_not: _containers.RepeatedCompositeFieldContainer[Query]
    filter: _containers.RepeatedCompositeFieldContainer[Query]
    minimum_should_match: str
    boost: float
    def __init__(self, must: _Optional[_Iterable[_Union[Query, _Mapping]]] = ..., should: _Optional[_Iterable[_Union[Query, _Mapping]]] = ..., must_not: _Optional[_Iterable[_Union[Query, _Mapping]]] = ..., filter: _Optional[_Iterable[_Union[Query, _Mapping]]] = ..., minimum_should_match: _Optional[str] = ..., boost: _Optional[float] = ...) -> None: ...

class RangeQuery(_message.Message):
    __slots__ = ("field", "gt", "gte", "lt", "lte", "boost")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    GT_FIELD_NUMBER: _ClassVar[int]
    GTE_FIELD_NUMBER: _ClassVar[int]
    LT_FIELD_NUMBER: _ClassVar[int]
    LTE_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    field: str
    gt: _types_pb2.FieldValue
    gte: _types_pb2.FieldValue
    lt: _types_pb2.FieldValue
    lte: _types_pb2.FieldValue
    boost: float
    def __init__(self, field: _Optional[str] = ..., gt: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ..., gte: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ..., lt: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ..., lte: _Optional[_Union[_types_pb2.FieldValue, _Mapping]] = ..., boost: _Optional[float] = ...) -> None: ...

class PhraseQuery(_message.Message):
    __slots__ = ("field", "query", "slop", "boost")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SLOP_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    field: str
    query: str
    slop: int
    boost: float
    def __init__(self, field: _Optional[str] = ..., query: _Optional[str] = ..., slop: _Optional[int] = ..., boost: _Optional[float] = ...) -> None: ...

class IdsQuery(_message.Message):
    __slots__ = ("values", "boost")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    BOOST_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    boost: float
    def __init__(self, values: _Optional[_Iterable[str]] = ..., boost: _Optional[float] = ...) -> None: ...

class SortField(_message.Message):
    __slots__ = ("field", "order", "missing_first")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIRST_FIELD_NUMBER: _ClassVar[int]
    field: str
    order: SortOrder
    missing_first: bool
    def __init__(self, field: _Optional[str] = ..., order: _Optional[_Union[SortOrder, str]] = ..., missing_first: _Optional[bool] = ...) -> None: ...

class SearchAfter(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[_types_pb2.SortValue]
    def __init__(self, values: _Optional[_Iterable[_Union[_types_pb2.SortValue, _Mapping]]] = ...) -> None: ...
