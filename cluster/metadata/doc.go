// Package metadata is the index and alias API over the cluster state in
// etcd: the core that the coordinator's gRPC handlers translate to and from
// (as zoekt's API sits under its gRPC adapter), and that data nodes call for
// dynamic mapping updates.
//
// Every change is one guarded etcd transaction built from a state read
// (state.Store.Update): creation checks the index and alias keys are absent;
// deletion removes the index key, its routing prefix and its alias entries
// together; alias actions apply all or nothing. A transaction whose guards
// fail re-reads and retries, so concurrent callers serialize without locks.
//
// Errors wrap state.ErrInvalid, state.ErrNotFound or state.ErrAlreadyExists and
// name the offending field or name; mapping to gRPC codes happens at the
// edge (coordinator/server).
//
// Validation follows Elasticsearch where Sluice has the same concept: index
// and alias names, shard and routing shard counts (routing shards a
// multiple of shards), replicas (0 to MaxReplicas, dynamic), dynamic
// settings (refresh_interval at least 100 ms unless off, which
// Elasticsearch does not bound), and mappings (types, analyzers, a field
// may not be both a leaf and an object; a mapping update may add fields but
// not change them; new fields within the index's mapping limits:
// index.mapping.total_fields.limit, depth.limit, field_name_length.limit).
// Dynamic mapping updates from nodes pass the same checks, so two shards
// racing to add one field with two types, or fields past a limit, meet in
// one transaction and the later loses. An error about one field names it
// (rpc.FieldError). A change larger than one etcd transaction holds is
// refused as invalid (state.MaxTxnOps, MaxTxnBytes) rather than failing in
// etcd.
//
// A new index's shards get routing entries with number_of_replicas + 1
// unassigned copies at primary term 1 (state.NewShardRouting); the
// allocator places them, and follows later changes of the replica count.
// A settings update changes the fields set in it, or with a field mask
// exactly the fields named (zero values included: 0 replicas, a setting
// back to its default).
package metadata
