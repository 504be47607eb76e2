// Package oneline folds messages onto one line, the form lenspec gives
// every error it prints or records: a results file holds one record per
// line, and the CLI prints one error line.
package oneline

import "strings"

// Fold returns s on one line: runs of spaces and tabs become one space,
// and the lines of a multi-line message (errors.Join puts each joined
// error on its own) are separated by "; ".
func Fold(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
