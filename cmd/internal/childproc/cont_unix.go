//go:build unix

package childproc

import "syscall"

// sigCont resumes a process stopped by SIGSTOP.
const sigCont = syscall.SIGCONT
