package experiment

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/attack"
	"github.com/spf13/pflag"
)

// TestAttackSettingsFlags: the flags start at the paper's PGD and flip's
// defaults, the help says which attacks read a text setting only where a
// command takes images too, and each flag sets its field.
func TestAttackSettingsFlags(t *testing.T) {
	parse := func(t *testing.T, qualify bool, args ...string) (AttackSettings, *pflag.FlagSet) {
		t.Helper()
		var s AttackSettings
		fs := pflag.NewFlagSet("attack", pflag.ContinueOnError)
		s.RegisterFlags(fs)
		s.RegisterTextFlags(fs, qualify)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return s, fs
	}
	s, fs := parse(t, true)
	fl := attack.DefaultFlip()
	want := AttackSettings{LR: 0.0005, Clip: 1, Loss: string(attack.LossMargin), Restarts: 1, EarlyStop: true,
		Tau: 1, Beam: fl.Beam, Swaps: fl.Swaps, Loop: fl.Loop, Horizon: DefaultHorizon}
	if s != want {
		t.Fatalf("defaults %+v, want %+v", s, want)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	if u := fs.Lookup("beam").Usage; !strings.HasPrefix(u, "text (flip): ") {
		t.Errorf("--beam of a command taking images too: %q", u)
	}
	if _, fs := parse(t, false); !strings.HasPrefix(fs.Lookup("beam").Usage, "flip: ") || !strings.HasPrefix(fs.Lookup("tau").Usage, "Gumbel") {
		t.Errorf("--beam, --tau of a text command: %q, %q", fs.Lookup("beam").Usage, fs.Lookup("tau").Usage)
	}
	s, _ = parse(t, false, "--lr", "0.1", "--clip", "2", "--loss", "eos-logprob", "--restarts", "3", "--early-stop=false",
		"--tau", "0.5", "--beam", "2", "--swaps", "7", "--loop=false", "--horizon", "0")
	want = AttackSettings{LR: 0.1, Clip: 2, Loss: "eos-logprob", Restarts: 3, Tau: 0.5, Beam: 2, Swaps: 7, Horizon: 0}
	if s != want {
		t.Fatalf("every flag set: %+v, want %+v", s, want)
	}
}

// TestCheckRead: a setting given that none of the methods run reads is a
// SettingsError naming the methods that do; one some method reads, or a
// flag not given, passes.
func TestCheckRead(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(flag string) bool {
			for _, n := range names {
				if n == flag {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		given   []string
		methods []string
		want    string
	}{
		{nil, []string{MethodRandom}, ""},
		{[]string{"lr", "restarts", "early-stop", "loss", "clip"}, []string{MethodPGD}, ""},
		{[]string{"lr"}, []string{MethodRandom, MethodPGD}, ""},
		{[]string{"lr"}, []string{MethodRandom}, "--lr is read by " + strings.Join(ReadBy("lr", MethodNames(false)), " and ") + " only, not by random"},
		{[]string{"early-stop"}, []string{MethodRandom}, "--early-stop is read by pgd only, not by random"},
	} {
		err := CheckRead(given(tc.given...), tc.methods, MethodNames(false))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v with %v: %v", tc.given, tc.methods, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.As(err, new(SettingsError))):
			t.Errorf("%v with %v: got %v, want the SettingsError %q", tc.given, tc.methods, err, tc.want)
		}
	}
	for _, m := range TextMethods {
		if err := CheckRead(given("tau"), []string{m}, TextMethods); (err == nil) != (len(ReadBy("tau", []string{m})) > 0) {
			t.Errorf("--tau with %s: %v", m, err)
		}
	}
}

// TestBudgets: a --METHOD-budget per text method, starting at its
// TextBudget; one given sets the budget of that method's runs only, and
// one given for a method not run is refused.
func TestBudgets(t *testing.T) {
	fs := pflag.NewFlagSet("nmt-attack", pflag.ContinueOnError)
	b := RegisterBudgetFlags(fs)
	for _, m := range TextMethods {
		def, _ := LookupMethod(m)
		if b[m] == nil || *b[m] != def.TextBudget || fs.Lookup(m+"-budget").DefValue != fmt.Sprint(def.TextBudget) {
			t.Fatalf("--%s-budget: %v, want %d", m, b[m], def.TextBudget)
		}
	}
	if err := fs.Parse([]string{"--" + MethodFlip + "-budget", "7"}); err != nil {
		t.Fatal(err)
	}
	cfgs := []AttackConfig{{Method: MethodRandom, Settings: AttackSettings{Budget: 1}}, {Method: MethodFlip, Settings: AttackSettings{Budget: 1}}}
	if err := b.Apply(cfgs, fs.Changed); err != nil {
		t.Fatal(err)
	}
	if cfgs[0].Settings.Budget != 1 || cfgs[1].Settings.Budget != 7 {
		t.Fatalf("budgets %d, %d; want 1 (not given) and 7", cfgs[0].Settings.Budget, cfgs[1].Settings.Budget)
	}
	err := b.Apply(cfgs[:1], fs.Changed)
	want := "--" + MethodFlip + "-budget: --methods " + MethodRandom + " does not run " + MethodFlip
	if err == nil || err.Error() != want || !errors.As(err, new(SettingsError)) {
		t.Fatalf("a budget for a method not run: %v, want the SettingsError %q", err, want)
	}
	// A budget of no search is refused naming its flag, as every
	// attack's (CheckBudget).
	if err := fs.Parse([]string{"--" + MethodRandom + "-budget", "0"}); err != nil {
		t.Fatal(err)
	}
	err = b.Apply(cfgs, fs.Changed)
	if want := "--random-budget 0: want 1..1000000000"; err == nil || err.Error() != want || !errors.As(err, new(SettingsError)) {
		t.Fatalf("a budget of 0: %v, want the SettingsError %q", err, want)
	}
}
