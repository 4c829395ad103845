// Package server is the data node's data path adapter: it serves and
// registers the internal sluice.node.v1.Node service over a shard.Host. Handlers translate — proto in,
// shard call (bulk orchestration, readers and refresh policy live on the
// shard), proto out. They return the core's typed errors as they are: the
// node's error table (node.Errors), which the node's server applies,
// gives their codes, and describes the errors of single bulk items.
//
// # Pinned readers
//
// Point-in-time readers (OpenShardReader, and the reader a ShardSearch pins
// for its fetch phase) are the shard's pinned readers (shard.PinReader,
// with the node's cap and keep-alive reaper). A ShardSearch without a
// reader id pins the latest reader for a short keep-alive
// (Options.SearchKeepAlive); the coordinator releases it with
// ShardFetch{release} or CloseShardReader.
//
// # Scans and slices
//
// ShardScan walks live documents of a pinned reader in index order (shard-
// local doc ids), without scoring. A slice {id, max} keeps the documents
// whose engine.SliceHash(_id) % max == id, so slices are disjoint and
// together complete, and cut a shard as reindex slices do. The hash is not
// the routing hash: routing put a shard's documents in one residue class of
// the routing hash, so slicing by it again would leave most sub-slices
// empty. The selection (live ∧ slice ∧ query, engine.Reader.Select) is
// computed once per reader, slice and query as per-segment bitsets — the
// slice from the _id term dictionary, no stored fields read — which also
// gives the exact total up front. The cursor is the next shard-local doc, so
// a scan resumes exactly where a broken stream stopped, on the same reader.
//
// # Verify
//
// VerifyShard checksums every file of an open shard now
// (shard.Host.Verify; with deep, every segment decoded), one verification
// at a time per node so that concurrent requests do not share the disk.
// Damage fails the shard as the scrubber's does, and the response carries
// every file's result and the shard's failure.
package server
