package dirlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestAcquire(t *testing.T) {
	dir := t.TempDir() + "/data"
	l, err := Acquire(dir, "x.lock")
	if err != nil {
		t.Fatal(err)
	}
	// A second holder, even in this process, is refused at once and told who holds it.
	_, err = Acquire(dir, "x.lock")
	want := fmt.Sprintf("data dir %s is in use by process %d, which holds %s/x.lock", dir, os.Getpid(), dir)
	if err == nil || err.Error() != want || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire: %v, want %q", err, want)
	}
	// Another lock name in the same directory is another lock.
	other, err := Acquire(dir, "y.lock")
	if err != nil {
		t.Fatal(err)
	}
	other.Release()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = Acquire(dir, "x.lock")
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l.Release()
}

// TestHolderDies shows the kernel releases the lock of a process that
// dies without releasing it.
func TestHolderDies(t *testing.T) {
	if os.Getenv("DIRLOCK_HOLD") != "" {
		if _, err := Acquire(os.Getenv("DIRLOCK_HOLD"), "x.lock"); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderDies$")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q, %v", buf, err)
	}
	_, err = Acquire(dir, "x.lock")
	if want := fmt.Sprintf("in use by process %d", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("while the child holds it: %v, want %q", err, want)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(dir, "x.lock")
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	l.Release()
}
