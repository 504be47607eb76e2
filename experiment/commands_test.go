package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/spf13/pflag"
)

// TestCommandSettings: lenspec decode's, gates', data captions' and data
// multimnist's settings are checked as SettingsErrors naming the flags,
// before the data are asked for.
func TestCommandSettings(t *testing.T) {
	dir := tinyModelDir(t, 4)
	out := t.TempDir()
	type command interface {
		RegisterFlags(*pflag.FlagSet)
	}
	for _, tc := range []struct {
		name string
		cmd  func() command
		args []string
		want string // a SettingsError's words; "" for errNoData
	}{
		{"decode", func() command { return &DecodeSettings{} }, []string{"--index", "1"}, "--model is required"},
		{"decode", func() command { return &DecodeSettings{} }, []string{"--model", dir}, "give exactly one of --image, --input or --index"},
		{"decode", func() command { return &DecodeSettings{} }, []string{"--model", dir, "--index", "1", "--max-steps", "0"}, "--max-steps 0"},
		{"decode", func() command { return &DecodeSettings{} }, []string{"--model", dir, "--index", "1"}, ""},
		{"gates", func() command { return &GateSettings{} }, []string{"--images", "1"}, "--model is required"},
		{"gates", func() command { return &GateSettings{} }, []string{"--model", dir, "--threshold", "NaN"}, "--threshold NaN: want a positive number"},
		{"gates", func() command { return &GateSettings{} }, []string{"--model", dir, "--threshold", "-Inf"}, "--threshold -Inf"},
		{"gates", func() command { return &GateSettings{} }, []string{"--model", dir, "--max-steps", "-1"}, "--max-steps -1"},
		{"gates", func() command { return &GateSettings{} }, []string{"--model", dir, "--images", "1"}, ""},
		{"captions", func() command { return &CaptionPreviewing{} }, nil, "--out is required"},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--out", out, "--scale", "17"}, "--scale in 1..16"},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--out", out, "--lengths", "long"}, `--lengths "long"`},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--out", out}, ""},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--out", out, "--count", "100000000"}, "--count 100000000: want at most 10000, the test split's canvases"},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--histogram"}, ""},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--histogram", "--split", "dev"}, `--split "dev": want train or test`},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--histogram", "--count", "3"}, "--count is read only with --out: --histogram without it writes no previews"},
		{"captions", func() command { return &CaptionPreviewing{} }, []string{"--histogram", "--model", dir}, "--model is read only with --out: --histogram without it writes no previews"},
		{"multimnist", func() command { return &MultiMNISTPreviewing{} }, []string{"--out", out, "--count", "0"}, "--count must be positive"},
		{"multimnist", func() command { return &MultiMNISTPreviewing{} }, []string{"--out", out, "--split", "dev"}, `--split "dev"`},
		{"multimnist", func() command { return &MultiMNISTPreviewing{} }, []string{"--out", out, "--split", "train", "--count", "50001"}, "--count 50001: want at most 50000, the train split's canvases"},
		{"multimnist", func() command { return &MultiMNISTPreviewing{} }, []string{"--out", out}, ""},
	} {
		c := tc.cmd()
		fs := pflag.NewFlagSet(tc.name, pflag.ContinueOnError)
		c.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		env := Env{Changed: fs.Changed, Sources: func() (Sources, error) { return Sources{}, errNoData }}
		var err error
		switch c := c.(type) {
		case *DecodeSettings:
			_, err = c.Decode(ctx, env)
		case *GateSettings:
			_, err = c.Measure(ctx, env)
		case *CaptionPreviewing:
			_, err = c.Write(ctx, env)
		case *MultiMNISTPreviewing:
			_, err = c.Write(ctx, env)
		}
		if tc.want == "" {
			if !errors.Is(err, errNoData) {
				t.Errorf("%s %v: %v, want the data asked for", tc.name, tc.args, err)
			}
		} else if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want a SettingsError with %q", tc.name, tc.args, err, tc.want)
		}
	}
}

// TestCommandReports: the reports' JSON is what the commands printed
// before they were types (a list of sets, a list of canvases) and their
// text is the items' own.
func TestCommandReports(t *testing.T) {
	sets := []GateSet{{Name: "clean", Summary: model.GateSummary{Paths: 2, Stopped: 1, EOSMarginMean: 1.5}}, {Name: "attacked"}}
	r := GateReport{sets, 3}
	got, err := json.Marshal(r)
	want, err2 := json.Marshal(sets)
	if err != nil || err2 != nil || string(got) != string(want) {
		t.Errorf("gates JSON %s, want %s (%v %v)", got, want, err, err2)
	}
	var w strings.Builder
	r.WriteText(&w)
	if text := sets[0].Text(3) + sets[1].Text(3); w.String() != text {
		t.Errorf("gates text %q, want %q", w.String(), text)
	}
	p := MultiMNISTPreviews{{PNG: "test-00000.png", Label: []int{1, 2}}, {PNG: "test-00001.png", Label: []int{7}}}
	w.Reset()
	p.WriteText(&w)
	if want := "test-00000.png  label [1 2]\ntest-00001.png  label [7]\n"; w.String() != want {
		t.Errorf("multimnist text %q, want %q", w.String(), want)
	}
	if got, _ := json.Marshal(p); !strings.HasPrefix(string(got), `[{`) {
		t.Errorf("multimnist JSON %s", got)
	}
	var _ []multimnist.Preview = p // the report is the list WritePreviews returns
}
