package bench

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFlags: the flags start at the defaults, which their help shows, and
// set the fields they name.
func TestFlags(t *testing.T) {
	o, p := DefaultOptions(), DefaultPeerOptions()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o.RegisterFlags(fs)
	p.RegisterFlags(fs)
	if !reflect.DeepEqual(o, DefaultOptions()) || !reflect.DeepEqual(p, DefaultPeerOptions()) {
		t.Fatalf("registering changed the defaults: %+v %+v", o, p)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	err := fs.Parse([]string{"--reps", "3", "--decode", "4", "--batch", "5", "--grad-steps", "6", "--max-steps", "7", "--gemm", "8", "--pgd-batch", "9",
		"--peer", "bench/peer.py", "--python", "py", "--rounds", "10", "--min-rounds", "2", "--tolerance", "0.1", "--budget", "1m", "--round-time", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	wo, wp := DefaultOptions(), DefaultPeerOptions()
	wo.Reps, wo.DecodeN, wo.TrainBatch, wo.GradSteps, wo.DecodeSteps, wo.GEMMSize, wo.PGDBatch = 3, 4, 5, 6, 7, 8, 9
	wp.Script, wp.Python, wp.Rounds, wp.MinRounds, wp.Tolerance, wp.Budget, wp.RoundTime = "bench/peer.py", "py", 10, 2, 0.1, time.Minute, 2*time.Second
	if !reflect.DeepEqual(o, wo) || !reflect.DeepEqual(p, wp) {
		t.Fatalf("got %+v %+v\nwant %+v %+v", o, p, wo, wp)
	}
}
