package main

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
)

// checkout is the code as the run began: the JSON, the header line and the
// charts name that, not what the work tree became meanwhile.
type checkout struct {
	commit string // short hash, or why there is none
	dirty  string // what differs from the commit ("" when nothing)
}

// stamp is the commit a run is stamped with: marked +dirty when the work
// tree differs from it.
func (c checkout) stamp() string {
	if c.dirty != "" {
		return c.commit + "+dirty"
	}
	return c.commit
}

var startCheckout = sync.OnceValue(func() checkout {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return checkout{commit: "unknown (not a git checkout)"}
	}
	c := checkout{commit: strings.TrimSpace(string(out))}
	// --no-optional-locks: look without refreshing the index, so that the
	// bench writes nothing to the repository. Untracked files count when
	// the build would use them.
	st, err := exec.Command("git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		c.dirty = "git status failed: " + err.Error()
		return c
	}
	var changed []string
	for _, line := range strings.Split(string(bytes.TrimRight(st, "\n")), "\n") {
		if len(line) < 4 {
			continue
		}
		path := line[3:]
		if strings.HasPrefix(line, "??") && !buildInput(path) {
			continue
		}
		changed = append(changed, path)
	}
	if len(changed) > 0 {
		c.dirty = strings.Join(changed[:min(5, len(changed))], ", ")
		if len(changed) > 5 {
			c.dirty += ", …"
		}
	}
	return c
})

// buildInput reports whether an untracked file would change what runs.
func buildInput(path string) bool {
	return strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "/go.mod") || path == "go.mod" ||
		path == "go.sum" || strings.HasSuffix(path, ".py") || strings.HasSuffix(path, ".sh")
}
