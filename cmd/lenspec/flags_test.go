package main

import (
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sentinelDefaults are the flags whose help shows another default than
// their variable's initial value, −1 for "not given": verify's K̂ is then
// the label's length, an attack's the original output's (their help says
// so in words), bound's the verifier's limit.
var sentinelDefaults = map[string]string{
	"verify --max-len":                   "0",
	"experiment mmnist-verify --max-len": "0",
	"bound --max-len":                    fmt.Sprint(verify.MaxK),
	"attack --max-len":                   "0",
	"experiment mmnist-attack --max-len": "0",
	"experiment nmt-attack --max-len":    "0",
}

// TestFlagDefaultsDocumented: for every flag of every command, the default
// its help shows is the flag's own: pflag prints DefValue, which must be
// the variable's initial value (but for the sentinels above), and a
// default written into the usage by hand, "(default X)", must equal it
// (defaults in words are written "(default: …)").
func TestFlagDefaultsDocumented(t *testing.T) {
	root := newRoot(&app{stdout: io.Discard, stderr: io.Discard})
	written := regexp.MustCompile(`\(default ([^)]*)\)`)
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "lenspec ")
		check := func(f *pflag.Flag) {
			checked++
			name := strings.TrimSpace(path + " --" + f.Name)
			if want, ok := sentinelDefaults[name]; ok {
				if f.DefValue != want {
					t.Errorf("%s: help shows default %q, want %q", name, f.DefValue, want)
				}
			} else if v := f.Value.String(); v != f.DefValue && !strings.HasSuffix(f.Value.Type(), "Slice") && f.Value.Type() != "stringArray" {
				t.Errorf("%s: help shows default %q, the flag starts at %q", name, f.DefValue, v)
			}
			for _, m := range written.FindAllStringSubmatch(f.Usage, -1) {
				if m[1] != f.DefValue {
					t.Errorf("%s: usage says (default %s), the flag's default is %q", name, m[1], f.DefValue)
				}
			}
		}
		c.PersistentFlags().VisitAll(check)
		c.Flags().VisitAll(check)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if checked < 100 {
		t.Fatalf("only %d flags checked", checked)
	}
}

// TestVerifyFlagsAreLibraryDefaults: lenspec verify given no flags runs
// the library's default (experiment.DefaultVerifySettings, built on
// verify.DefaultOptions), and its help says what the engine does today.
func TestVerifyFlagsAreLibraryDefaults(t *testing.T) {
	dir := smallModel(t)
	m, err := experiment.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &experiment.VerifyFlags{}
	c := &cobra.Command{Use: "verify"}
	f.RegisterFlags(c.Flags(), true)
	if err := c.ParseFlags([]string{"--eps", "0.1"}); err != nil {
		t.Fatal(err)
	}
	f.Eps = []float64{0.1}
	got, err := f.Config(experiment.Env{Changed: c.Flags().Changed}, experiment.Whole, m)
	if err != nil {
		t.Fatal(err)
	}
	want := experiment.VerifyConfig{Model: m, Eps: []float64{0.1}, Settings: experiment.DefaultVerifySettings()}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Settings, want.Settings) {
		t.Fatalf("the CLI's default settings\n%+v\nthe library's\n%+v", got.Settings, want.Settings)
	}
	if lib := verify.DefaultOptions(); f.Settings.Timeout != lib.TimeLimit.Seconds() || c.Flags().Lookup("timeout").DefValue != lib.TimeLimit.String() {
		t.Fatalf("--timeout default %vs, the library's %v", f.Settings.Timeout, lib.TimeLimit)
	}
	if d := c.Flags().Lookup("bab").DefValue; d != "true" {
		t.Fatalf("--bab default %s", d)
	}
	// The help describes the batched engine: branch and bound alternates
	// with the wide falsifier's rounds.
	for name, words := range map[string][]string{
		"bab":             {"between which the wide falsifier runs again", "--no-mip, all the time"},
		"search-restarts": {"between slices of branch and bound", "once the bounds have not proved"},
		"no-mip":          {"branch and bound alternating with rounds of the wide falsifier"},
	} {
		u := c.Flags().Lookup(name).Usage
		for _, w := range words {
			if !strings.Contains(u, w) {
				t.Errorf("--%s help %q: want %q", name, u, w)
			}
		}
	}
}
