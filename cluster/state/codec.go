package state

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Values are the records of proto/sluice/state/v1 in their JSON form
// (protojson with the .proto field names): `etcdctl get --prefix /sluice/`
// shows readable state, and unknown fields are ignored on read, so a newer
// version can add fields without breaking an older reader. The public API's
// messages are built from them (Snapshot.Info, NodeInfo, AliasInfo).
//
//	nodes/<id>             sluice.state.v1.Node          (live is implied by the key existing)
//	indices/<name>         sluice.state.v1.Index         (name, uuid, settings, mapping, state, creation_time)
//	routing/<uuid>/<shard> sluice.state.v1.ShardRouting        (copies, primary_term, in_sync)
//	aliases/<alias>        sluice.state.v1.Alias
//	tasks/<id>             sluice.state.v1.ReindexTask   (coordinator/reindex)
var (
	marshalOpts   = protojson.MarshalOptions{UseProtoNames: true}
	unmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// Marshal encodes a stored value.
func Marshal(m proto.Message) (string, error) {
	b, err := marshalOpts.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("cluster state: encode %T: %w", m, err)
	}
	return string(b), nil
}

// Unmarshal decodes a stored value into m.
func Unmarshal(b []byte, m proto.Message) error {
	if err := unmarshalOpts.Unmarshal(b, m); err != nil {
		return fmt.Errorf("cluster state: decode %T: %w", m, err)
	}
	return nil
}
