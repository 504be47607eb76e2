package experiment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Shard is the K-th (1-based) of N interleaved parts of a run's units of
// work, so that N processes — one per core, or the tasks of a Kubernetes
// Indexed Job or a Slurm array — share it, each writing its own file.
type Shard struct{ K, N int }

// Whole is the unsharded run.
var Whole = Shard{1, 1}

// ParseShard parses "k/n" with 1 ≤ k ≤ n; "" is the whole run.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Whole, nil
	}
	var k, n int
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != s {
		return Shard{}, fmt.Errorf("shard %q: want k/n with 1 ≤ k ≤ n", s)
	}
	return Shard{k, n}, nil
}

// ShardFromEnv reads the shard a batch system assigned this process:
// JOB_COMPLETION_INDEX (0-based) and JOB_COMPLETIONS for a Kubernetes
// Indexed Job, or SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT,
// SLURM_ARRAY_TASK_MIN (the array's first index, 0 if unset) and
// SLURM_ARRAY_TASK_MAX (its last) for a Slurm job array. ok is false when
// neither is set.
//
// A Slurm array gives its shards only when it is the whole run: at least
// two consecutive indices from 0 or 1. Some tasks of a run resubmitted as
// a new job (sbatch --array=7, or 7-9) form an array of their own whose
// count and first index are not the run's and would silently name other
// shards (--array=7 alone: the whole run); such an array is refused, and
// --shard k/n names the shard instead.
func ShardFromEnv(getenv func(string) string) (s Shard, ok bool, err error) {
	num := func(name string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(getenv(name)))
		if err != nil {
			return 0, fmt.Errorf("%s=%q: not an integer", name, getenv(name))
		}
		return v, nil
	}
	var idx, n int
	switch {
	case getenv("JOB_COMPLETION_INDEX") != "":
		if idx, err = num("JOB_COMPLETION_INDEX"); err != nil {
			return Shard{}, false, err
		}
		if n, err = num("JOB_COMPLETIONS"); err != nil {
			return Shard{}, false, fmt.Errorf("Indexed Job: %w", err)
		}
	case getenv("SLURM_ARRAY_TASK_ID") != "":
		if idx, err = num("SLURM_ARRAY_TASK_ID"); err != nil {
			return Shard{}, false, err
		}
		if n, err = num("SLURM_ARRAY_TASK_COUNT"); err != nil {
			return Shard{}, false, fmt.Errorf("Slurm array: %w", err)
		}
		lo, hi := 0, n-1
		if getenv("SLURM_ARRAY_TASK_MIN") != "" {
			if lo, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
				return Shard{}, false, err
			}
			hi = lo + n - 1
		}
		if getenv("SLURM_ARRAY_TASK_MAX") != "" {
			if hi, err = num("SLURM_ARRAY_TASK_MAX"); err != nil {
				return Shard{}, false, err
			}
		}
		if n < 2 || lo < 0 || lo > 1 || hi-lo+1 != n {
			return Shard{}, false, fmt.Errorf("Slurm array %d-%d (task count %d) is not a whole run, whose task IDs are two or more consecutive numbers from 0 or 1: to rerun some tasks of a run, give each its shard with --shard K/N", lo, hi, n)
		}
		idx -= lo
	default:
		return Whole, false, nil
	}
	if n < 1 || idx < 0 || idx >= n {
		return Shard{}, false, fmt.Errorf("task index %d outside 0..%d of %d tasks (arrays must be contiguous)", idx, n-1, n)
	}
	return Shard{idx + 1, n}, true, nil
}

// String is "k/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// ResolveShard is the shard a run is: spec ("k/n", ParseShard) when
// given, else the one the batch system's environment names (ShardFromEnv;
// neither: the whole run). Either malformed is a SettingsError.
func ResolveShard(spec string, getenv func(string) string) (Shard, error) {
	if spec != "" {
		s, err := ParseShard(spec)
		return s, settingsErr(err)
	}
	s, _, err := ShardFromEnv(getenv)
	return s, settingsErr(err)
}

// Takes reports whether the unit with the given 0-based ordinal in the
// run's order belongs to this shard. The zero Shard is the whole run.
func (s Shard) Takes(ordinal int) bool { return s.N <= 1 || ordinal%s.N == s.K-1 }

// Path is where this shard writes a run whose output is out:
// runs/x.jsonl becomes runs/x.shard-2-of-4.jsonl; the whole run writes out
// itself.
func (s Shard) Path(out string) string {
	if s.N <= 1 {
		return out
	}
	ext := filepath.Ext(out)
	return fmt.Sprintf("%s.shard-%d-of-%d%s", strings.TrimSuffix(out, ext), s.K, s.N, ext)
}
