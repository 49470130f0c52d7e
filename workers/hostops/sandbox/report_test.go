package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReportWithoutPathsNamesNoDirectory(t *testing.T) {
	full := Report{Mode: ModeBestEffort,
		Cgroup:   CgroupReport{Mode: "v2", Parent: "/sys/fs/cgroup/svcd-exec", Controllers: []string{"pids"}},
		Landlock: LandlockReport{ABI: 7, WriteRoots: []string{"/var/lib/svcd/exec-scratch"}, ReadRoots: []string{"/srv/ro"}},
		Missing:  []string{"cgroup: /sys/fs/cgroup/x: permission denied; …", "identity: commands run as root"}}
	b, _ := json.Marshal(full.WithoutPaths())
	for _, path := range []string{"/sys/fs", "/var/lib/svcd", "/srv/ro"} {
		if strings.Contains(string(b), path) {
			t.Errorf("redacted report names %s: %s", path, b)
		}
	}
	if r := full.WithoutPaths(); len(r.Missing) != 2 || !strings.HasPrefix(r.Missing[0], "cgroup:") || r.Landlock.ABI != 7 {
		t.Errorf("redacted report lost its levels: %+v", r)
	}
	if full.Cgroup.Parent == "" || len(full.Landlock.WriteRoots) != 1 || !strings.Contains(full.Missing[0], "/sys/fs") {
		t.Error("WithoutPaths changed the report it was called on")
	}
}
