// The test binary of gostall (`go test -c`), for leaks qualify sees only through the test
// binary's own execution trace (-test.trace): every test passes.
//
//   TestLeaks     leaves two goroutines blocked: one sending on a channel nobody reads, one
//                 waiting for a mutex the test never unlocks -> `ok`, flag `leaked_threads`.
//   TestNoLeaks   its goroutines end before it returns -> `ok`, nothing left.
package main

import (
	"sync"
	"testing"
	"time"
)

func TestLeaks(t *testing.T) {
	results := make(chan int)
	go func() { results <- 42 }() // nobody receives: blocked in chan send
	var mu sync.Mutex
	mu.Lock()
	started := make(chan bool)
	go func() {
		started <- true
		mu.Lock() // never unlocked: blocked in sync
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // both are blocked by now
}

func TestNoLeaks(t *testing.T) {
	results := make(chan int)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); results <- 42 }()
	if got := <-results; got != 42 {
		t.Fatalf("got %d", got)
	}
	wg.Wait()
}
