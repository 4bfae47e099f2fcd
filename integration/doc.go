// Package integration holds end-to-end tests that run the project's
// pipelines as real processes on real Beam runners (embedded prism, a prism
// job server, Beam Python's portable job service), against real services
// on loopback. testdata/unboundedjob is a job of the tests' own: the
// transform on an unbounded source, its outputs counted after it;
// testdata/watermarkjob, plain Beam DoFns without the transform, shows how
// the Python job service fires event-time timers early. Run them
// with go test ./integration/... after eval "$(integration/redis.sh start)"
// and eval "$(integration/pybeam.sh start)".
package integration
