//go:build !unix

package childproc

import "syscall"

// sigCont: no job control here; signal 0 checks the process and does nothing.
const sigCont = syscall.Signal(0)
