package oneline

import (
	"errors"
	"testing"
)

func TestFold(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"  spaced \t out  ", "spaced out"},
		{errors.Join(errors.New("a is bad"), errors.New("b  is\tbad")).Error(), "a is bad; b is bad"},
		{"first\n\n  \nsecond\r\n", "first; second"},
	} {
		if got := Fold(c.in); got != c.want {
			t.Errorf("Fold(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
