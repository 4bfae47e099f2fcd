// Package integration holds end-to-end tests that run the project's
// pipelines as real processes on real Beam runners, against real services on
// loopback. Run them with go test ./integration/...
package integration
