// Package drain holds the data of the end-of-input drain of the unbounded
// path: the record the stream sends, per key callback, of the elements it
// accepted (escrowed) and committed (released); the drain's log of those
// records per key and the book the log amounts to (escrowed minus
// released); the summary each record reads instead of the log; and the
// ordinal that orders a key's records.
//
// The formats are state that outlives a worker: a version must read what
// the one before it wrote. The drain's DoFn (escrowFn, in the front)
// applies records and runs what the book holds at the end of input.
package drain
