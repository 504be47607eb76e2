//go:build !cgo

package cbc

import (
	"context"
	"errors"
	"testing"

	"github.com/lenspec/lenspec/mip"
)

func TestStub(t *testing.T) {
	m := mip.NewModel("m")
	m.AddVar("x", 0, 1, mip.Binary)
	if _, err := (Solver{}).Solve(context.Background(), m, mip.Options{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Solve: %v", err)
	}
	if _, err := NewLP(m); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NewLP: %v", err)
	}
}
