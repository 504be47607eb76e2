package main

import (
	"strings"
	"testing"
)

// TestBenchPeerUsage: the peer benchmark's settings out of range are
// usage errors (exit 2), found before any model is loaded or PyTorch
// started.
func TestBenchPeerUsage(t *testing.T) {
	dir := smallModel(t)
	peer := func(extra ...string) []string {
		return append([]string{"bench", "--model", dir, "--peer", "bench/peer.py"}, extra...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{peer("--tolerance", "nan"), "tolerance NaN"},
		{peer("--tolerance", "-1"), "tolerance -1"},
		{peer("--rounds", "0"), "rounds 0"},
		{peer("--min-rounds", "20"), "minimum rounds 20"},
		{peer("--budget", "-1s"), "budget -1s"},
		{peer("--round-time", "2h"), "round time 2h"},
		{peer("--blas-threads", "2"), "--blas-threads 2"},
		{peer("--isa", "sse4"), `--isa "sse4"`},
		{peer("--record", t.TempDir()), "--record"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
