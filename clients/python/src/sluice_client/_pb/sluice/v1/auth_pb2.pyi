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

class Privilege(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIVILEGE_UNSPECIFIED: _ClassVar[Privilege]
    PRIVILEGE_READ: _ClassVar[Privilege]
    PRIVILEGE_WRITE: _ClassVar[Privilege]
    PRIVILEGE_MANAGE: _ClassVar[Privilege]
    PRIVILEGE_MONITOR: _ClassVar[Privilege]
PRIVILEGE_UNSPECIFIED: Privilege
PRIVILEGE_READ: Privilege
PRIVILEGE_WRITE: Privilege
PRIVILEGE_MANAGE: Privilege
PRIVILEGE_MONITOR: Privilege

class IndexPrivileges(_message.Message):
    __slots__ = ("names", "privileges")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    privileges: _containers.RepeatedScalarFieldContainer[Privilege]
    def __init__(self, names: _Optional[_Iterable[str]] = ..., privileges: _Optional[_Iterable[_Union[Privilege, str]]] = ...) -> None: ...

class Role(_message.Message):
    __slots__ = ("name", "admin", "indices", "built_in")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    BUILT_IN_FIELD_NUMBER: _ClassVar[int]
    name: str
    admin: bool
    indices: _containers.RepeatedCompositeFieldContainer[IndexPrivileges]
    built_in: bool
    def __init__(self, name: _Optional[str] = ..., admin: _Optional[bool] = ..., indices: _Optional[_Iterable[_Union[IndexPrivileges, _Mapping]]] = ..., built_in: _Optional[bool] = ...) -> None: ...

class ApiKey(_message.Message):
    __slots__ = ("id", "name", "roles", "creator", "created", "expiration")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    CREATOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    creator: str
    created: _timestamp_pb2.Timestamp
    expiration: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., creator: _Optional[str] = ..., created: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expiration: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AuthenticateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AuthenticateResponse(_message.Message):
    __slots__ = ("principal", "roles", "api_key_name")
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    API_KEY_NAME_FIELD_NUMBER: _ClassVar[int]
    principal: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    api_key_name: str
    def __init__(self, principal: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., api_key_name: _Optional[str] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("name", "roles", "expiration")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    expiration: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., expiration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("key", "secret", "encoded")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    ENCODED_FIELD_NUMBER: _ClassVar[int]
    key: ApiKey
    secret: str
    encoded: str
    def __init__(self, key: _Optional[_Union[ApiKey, _Mapping]] = ..., secret: _Optional[str] = ..., encoded: _Optional[str] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[ApiKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[ApiKey, _Mapping]]] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PutRoleRequest(_message.Message):
    __slots__ = ("role",)
    ROLE_FIELD_NUMBER: _ClassVar[int]
    role: Role
    def __init__(self, role: _Optional[_Union[Role, _Mapping]] = ...) -> None: ...

class PutRoleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteRoleRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteRoleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRolesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRolesResponse(_message.Message):
    __slots__ = ("roles",)
    ROLES_FIELD_NUMBER: _ClassVar[int]
    roles: _containers.RepeatedCompositeFieldContainer[Role]
    def __init__(self, roles: _Optional[_Iterable[_Union[Role, _Mapping]]] = ...) -> None: ...
