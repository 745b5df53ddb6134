// Package plog is the append-only log of one partition of the embedded Iggy
// server. It stores Iggy batch records (iggy-protocol.md §4.1) exactly as the
// server serves them: stamped with the partition id, base offset and base
// timestamp, with the batch checksum recomputed, frames untouched.
//
// # Storage
//
// A log is a list of segments. The last segment is active and receives every
// Append; once it holds SegmentSize bytes or more it is sealed and a new,
// empty active segment starts at the next offset (so a segment can exceed
// SegmentSize by its last batch, and a log always has at least one segment).
// Only sealed segments are ever deleted (retention, Truncate).
//
// With Options.Dir empty the log lives in memory only: every batch is one
// heap copy. With a directory, each segment is one file named after its base
// offset, zero-padded to 20 decimal digits, with the extension ".log"
// ("00000000000000001024.log"); it holds stamped batch records back to back
// and nothing else. Files with other names are ignored. There is no index
// file: Open rebuilds the in-memory index (base offset, base timestamp, file
// position, length and message count of every batch) by walking the files and
// checking every batch completely (iggy.CheckBatch: layout, frame checksums,
// batch checksum), plus: the stamped partition id equals Options.PartitionID,
// base offsets are contiguous from the first file's name, base timestamps
// strictly increase, and a batch is at most MaxBatchSize bytes.
//
// Recovery keeps the longest good prefix. The first bad or torn batch and
// everything after it in that file is truncated away with a logged warning;
// later segment files, which would leave a gap in the offsets, are renamed
// to "<name>.corrupt" (kept for inspection, never read again) with a logged
// error. A partition id mismatch is not repaired: Open fails with
// ErrPartitionMismatch, since it means a directory holds another partition.
//
// Each Append writes the stamped batch with one positional write (and an
// fsync with EnforceFsync), so after a process crash everything acknowledged
// is in the OS page cache and survives; without EnforceFsync a power loss
// can lose the tail, which recovery then truncates.
//
// # Reads
//
// Polls append to a caller-owned buffer and never copy whole segments: in a
// file-backed log the consecutive whole batches a poll needs from one
// segment are read with a single ReadAt straight into the destination, and a
// batch only partly requested is read into a pooled scratch buffer and
// served as a slice (iggy.AppendBatchSlice). The OS page cache is the read
// cache; plog keeps none of its own.
//
// # Offsets and pinning
//
// Message i (0-based position) of a stored batch has offset
// base_offset + i; slices are cut by position, which equals offset_delta for
// every producer that numbers its frames 0, 1, 2, … as §4.5 requires.
// Deletion (retention, Truncate) removes whole sealed segments from the
// oldest on, and stops at the first segment that still holds an offset above
// the pinned offset (SetPinned), per §7.2. Truncate's delete watermark stays:
// the segments at or below it that the pin held back go as soon as the pin
// moves past them (the real server's reconciler enforces its committed
// TruncatePartition watermark the same way).
//
// # Concurrency
//
// All methods are safe for concurrent use. Mutations are serialised by one
// mutex; polls run in parallel with each other and with the file write and
// fsync of an Append, and only wait for the short index update that
// publishes a new batch.
package plog
