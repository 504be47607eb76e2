package slurmdemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Cluster is a one-host Slurm cluster run by scripts/slurm-local.sh, its
// configuration, state and logs in Dir.
type Cluster struct {
	Script string // scripts/slurm-local.sh
	Dir    string // SLURM_LOCAL_DIR
	Port   int    // slurmctld's port (slurmd takes the next); 0: the script's default
	Log    io.Writer
}

// ErrCannotRun is returned by Start when Slurm cannot run on this machine
// at all (not Linux, not root, no apt-get): the script's exit status 3.
var ErrCannotRun = errors.New("Slurm cannot run on this machine")

// Env is the environment for Slurm's commands and the script: this
// process's, pointed at the cluster.
func (c *Cluster) Env() []string {
	env := append(os.Environ(), "SLURM_CONF="+filepath.Join(c.Dir, "etc", "slurm.conf"), "SLURM_LOCAL_DIR="+c.Dir)
	if c.Port != 0 {
		env = append(env, "SLURM_LOCAL_PORT="+strconv.Itoa(c.Port))
	}
	return env
}

// Start installs Slurm if needed and starts the cluster (a running one is
// left as it is).
func (c *Cluster) Start(ctx context.Context) error {
	err := c.script(ctx, "start")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return fmt.Errorf("%w: %v", ErrCannotRun, err)
	}
	return err
}

// Stop cancels the cluster's jobs and stops its daemons.
func (c *Cluster) Stop(ctx context.Context) error { return c.script(ctx, "stop") }

func (c *Cluster) script(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, "bash", c.Script, verb)
	cmd.Env = c.Env()
	cmd.Stdout, cmd.Stderr = c.Log, c.Log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", c.Script, verb, err)
	}
	return nil
}

// FreePorts returns a TCP port p such that p and p+1 are free now, for a
// cluster that must not meet another on this machine.
func FreePorts() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
		l.Close()
		if err == nil {
			l2.Close()
			return p, nil
		}
	}
	return 0, errors.New("no two consecutive free TCP ports")
}
