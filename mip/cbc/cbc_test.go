//go:build cgo

package cbc

import (
	"testing"

	"github.com/lenspec/lenspec/mip/internal/miptest"
)

func TestSuite(t *testing.T) {
	miptest.Run(t, Solver{})
}
