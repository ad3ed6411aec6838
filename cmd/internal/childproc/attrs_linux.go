package childproc

import (
	"os/exec"
	"syscall"
)

// setAttrs puts the child in its own process group and has the kernel SIGKILL it if the thread
// that started it dies.
func setAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
