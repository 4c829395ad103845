// Implementations:
//
//   - FSDirectory: one OS directory. Outputs are buffered (64 KiB), the CRC32
//     (IEEE) is kept incrementally per buffer, IOContext.Throttle is called
//     once per buffer flush (so merge rate limiting works in 64 KiB chunks).
//     Inputs are mmap'd read-only; the mapping outlives DeleteFile, so old
//     readers keep working on deleted files. Sync is fsync per file,
//     SyncMetaData is fsync of the directory.
//   - RAMDirectory: files on the Go heap; inputs share the written bytes.
//   - NRTCachingDirectory: small flush/merge outputs stay in a RAMDirectory
//     until Sync (commit) writes them through to the delegate.
package store
