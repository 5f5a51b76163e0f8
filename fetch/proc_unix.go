//go:build unix

package fetch

import (
	"os/exec"
	"syscall"
)

// killGroup runs the command in its own process group and kills the whole
// group when the context ends, so helpers git starts (remote transports)
// do not outlive the time limit.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
