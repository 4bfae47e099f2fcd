// Package bundlefile is the test jobs' way of reporting what a DoFn saw:
// the lines of one bundle go to a file of their own, read back after the
// run. The jobs' workers run on this machine (LOOPBACK or embedded), and on
// Beam Python's portable job service the metrics of a job of many bundles
// cannot be read after it ends ("maximum recursion depth exceeded").
package bundlefile

import (
	"os"
	"strings"
)

// Lines collects a bundle's lines; a DoFn keeps one in an unexported field
// and calls Flush in its FinishBundle.
type Lines struct{ lines []string }

// Add appends one line.
func (l *Lines) Add(line string) { l.lines = append(l.lines, line) }

// Flush writes the lines added since the last Flush to a new file in dir,
// and writes nothing when there are none.
func (l *Lines) Flush(dir string) error {
	if len(l.lines) == 0 {
		return nil
	}
	file, err := os.CreateTemp(dir, "bundle-*.txt")
	if err != nil {
		return err
	}
	_, err = file.WriteString(strings.Join(l.lines, "\n") + "\n")
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	l.lines = l.lines[:0]
	return err
}
