package experiment

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestRunSettingsFlags: the flags start at their help's defaults, set the
// fields they name (the user's PNGs before their inputs in Selection),
// and are refused, as SettingsErrors, in attack's and verify's order.
func TestRunSettingsFlags(t *testing.T) {
	parse := func(t *testing.T, samples bool, args ...string) (RunSettings, *pflag.FlagSet) {
		t.Helper()
		var r RunSettings
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		r.RegisterFlags(fs, samples)
		fs.IntVar(&r.MaxLen, "max-len", -1, "K̂")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return r, fs
	}
	r, fs := parse(t, true)
	if want := (RunSettings{Split: "test", Seed: 1, DataSeed: DefaultDataSeed, MaxLen: -1}); !reflect.DeepEqual(r, want) {
		t.Fatalf("defaults %+v, want %+v", r, want)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue && f.Name != "eps" && f.Name != "index" {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	if _, fs := parse(t, false); fs.Lookup("out") != nil || fs.Lookup("eps") != nil || fs.Lookup("shard") == nil {
		t.Error("without samples: --out and --eps are the command's own, --shard is shared")
	}
	r, _ = parse(t, true, "--model", "m", "--out", "o.jsonl", "--eps", "0.1,0.2", "--input", "b.safetensors", "--image", "a.png",
		"--max-steps", "7", "--seed", "3", "--data-seed", "4", "--split", "train", "--shard", "1/2")
	want := Selection{Files: []string{"a.png", "b.safetensors"}, Split: "train", DataSeed: 4, Seed: 3}
	if !reflect.DeepEqual(r.Selection(), want) || r.Model != "m" || r.Out != "o.jsonl" || r.Shard != "1/2" || r.MaxSteps != 7 || !reflect.DeepEqual(r.Eps, []float64{0.1, 0.2}) {
		t.Fatalf("every flag: %+v, selection %+v", r, r.Selection())
	}
	base := []string{"--model", "m", "--out", "o.jsonl", "--eps", "0.1"}
	for _, tc := range []struct {
		args []string
		want string // "": valid
		text string // ValidateText's answer
	}{
		{append(base, "--images", "2"), "", "--images is for image models; a text model takes --sentences"},
		{append(base, "--index", "1,2", "--max-steps", "9", "--split", "train"), "", ""},
		{[]string{"--out", "o", "--eps", "0.1", "--images", "1"}, "--model is required", "--images is for image models; a text model takes --sentences"},
		{[]string{"--model", "m", "--eps", "0.1", "--images", "1"}, "--out is required", "--out is required"},
		{[]string{"--model", "m", "--out", "o", "--images", "1"}, "--eps is required", "--eps is required"},
		{base, "give exactly one of --images N, --index I, or --image/--input files", ""},
		{append(base, "--images", "1", "--index", "2"), "give exactly one of --images N, --index I, or --image/--input files", "--images is for image models; a text model takes --sentences"},
		{append(base, "--images", "1", "--max-steps", "0"), "--max-steps 0: want 1..", "--images is for image models; a text model takes --sentences"},
		{append(base, "--index", "1", "--max-steps", "-3", "--split", "dev"), "--max-steps -3: want 1..", ""},
		{append(base, "--index", "1", "--split", "dev"), `--split "dev": want train or test`, ""},
	} {
		r, fs := parse(t, true, tc.args...)
		for _, c := range []struct {
			err  error
			want string
		}{{r.ValidateFlags(fs.Changed), tc.want}, {r.ValidateText(), tc.text}} {
			switch {
			case c.want == "" && c.err != nil:
				t.Errorf("%q: refused: %v", tc.args, c.err)
			case c.want != "" && (c.err == nil || !strings.HasPrefix(c.err.Error(), c.want)):
				t.Errorf("%q: got %v, want %q", tc.args, c.err, c.want)
			case c.err != nil && !isSettings(c.err):
				t.Errorf("%q: %v is not a SettingsError", tc.args, c.err)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		k    int
		want string
	}{{nil, -1, ""}, {[]string{"--max-len", "0"}, 0, ""}, {[]string{"--max-len", "12"}, 12, ""}, {[]string{"--max-len", "-1"}, 0, "--max-len -1: want K̂ ≥ 0"}} {
		r, fs := parse(t, true, tc.args...)
		k, err := r.K(fs.Changed)
		if k != tc.k || (err == nil) != (tc.want == "") || (err != nil && (err.Error() != tc.want || !isSettings(err))) {
			t.Errorf("%q: K %d, %v; want %d, %q", tc.args, k, err, tc.k, tc.want)
		}
	}
}

// TestRunSettingsShard: the shard comes from --shard, else the batch
// system's environment; a malformed one, or an output that is not a
// regular file, is refused.
func TestRunSettingsShard(t *testing.T) {
	env := map[string]string{"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"}
	getenv := func(k string) string { return env[k] }
	out := t.TempDir() + "/r.jsonl"
	for _, tc := range []struct {
		r    RunSettings
		want Shard
		err  string
	}{
		{RunSettings{Out: out, Shard: "2/4"}, Shard{2, 4}, ""},
		{RunSettings{Out: out}, Shard{2, 3}, ""},
		{RunSettings{Out: out, Shard: "5/4"}, Shard{}, `shard "5/4": want k/n with 1 ≤ k ≤ n`},
		{RunSettings{Out: "/dev/null", Shard: "1/1"}, Shard{}, "--out: "},
	} {
		got, err := tc.r.ResolveShard(getenv)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
			t.Errorf("%+v: %v, %v; want %v, %q", tc.r, got, err, tc.want, tc.err)
		}
	}
}

// isSettings reports whether err is a SettingsError.
func isSettings(err error) bool {
	_, ok := err.(SettingsError)
	return ok
}
