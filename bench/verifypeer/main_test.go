package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunRefuses checks that bad flags are usage errors (exit status 2)
// naming the flag, before any model is read.
func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"--images", "0"}, "--images 0: want at least 1"},
		{[]string{"--eps", "0"}, "--eps 0: want a positive radius"},
		{[]string{"--eps", "NaN"}, "--eps NaN: want a positive radius"},
		{[]string{"--iters", "0"}, "--iters 0: want at least 1"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(context.Background(), append(tc.args, "--model", "no/such/model"))
			var usage usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error saying %q", err, tc.want)
			}
		})
	}
}
