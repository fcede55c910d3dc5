// gostall: Go programs that fail, hang or only look stuck, one behaviour per mode.
//
// Usage: gostall MODE [ARG]
//
// Hangs qualify names (the process never ends by itself):
//   deadlock       two goroutines take two sync.Mutexes in opposite order, a third receives
//                  from a 100 ms ticker forever, main blocks in select{}: a timer keeps the Go
//                  runtime's own check from firing; at the deadline qualify asks for the
//                  goroutine dump (SIGQUIT) and names them -> `timeout`, `ambiguous_wait`.
// The Go runtime's own fatal reports (`fatal error: …`, exit status 2):
//   asleep         main waits on a channel nobody sends on -> `deadlock` ("all goroutines are asleep").
//   map            four goroutines write one map -> `crash` (concurrent map writes: a data race).
//   stack          unbounded recursion under a 64 MiB stack limit -> `crash` (stack overflow).
//   memory         one 1 TiB slice -> `out_of_memory` (the system refuses it).
//   threads N      N goroutines in blocking reads on pipes (a thread each): under --pids below N
//                  -> `exit_failure`, thread exhaustion naming the pids ceiling; above it -> `ok`.
// Twins that must end `ok`:
//   sleep S        main receives from a channel a goroutine fills after time.Sleep(S).
//   timer S        ... that time.AfterFunc(S) fills.
//   ticks S        ... that a goroutine fills after counting S*10 ticks of a 100 ms ticker.
//   map-locked     the four goroutines write the map under a mutex.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func worker(first, second *sync.Mutex, ready *sync.WaitGroup) {
	first.Lock()
	ready.Done()
	ready.Wait()
	second.Lock() // never returns
	second.Unlock()
	first.Unlock()
}

func deadlock() {
	ticker := time.NewTicker(100 * time.Millisecond)
	go func() {
		for range ticker.C {
		}
	}()
	var a, b sync.Mutex
	var ready sync.WaitGroup
	ready.Add(2)
	go worker(&a, &b, &ready)
	go worker(&b, &a, &ready)
	fmt.Fprintln(os.Stderr, "gostall: two goroutines taking a/b in opposite order")
	select {}
}

func seconds(args []string) float64 {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "gostall: this mode needs SECONDS")
		os.Exit(64)
	}
	s, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostall: SECONDS must be a number:", err)
		os.Exit(64)
	}
	return s
}

func filled(how string, seconds float64, fill func(done chan string)) {
	done := make(chan string)
	fill(done)
	fmt.Printf("channel %s after %.1f s (%s)\n", <-done, seconds, how)
}

func writeMap(locked bool) {
	m := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000000; i++ {
				if locked {
					mu.Lock()
				}
				m[i%100] = g
				if locked {
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	fmt.Printf("map of %d keys written\n", len(m))
}

func recurse(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	return recurse(n+1) + int(pad[0])
}

func threads(n int) {
	var wg sync.WaitGroup
	var writers []int
	for i := 0; i < n; i++ {
		var p [2]int
		if err := syscall.Pipe(p[:]); err != nil {
			fmt.Fprintln(os.Stderr, "gostall: pipe:", err)
			os.Exit(1)
		}
		writers = append(writers, p[1])
		wg.Add(1)
		go func(fd int) {
			defer wg.Done()
			var b [1]byte
			syscall.Read(fd, b[:]) // a blocking system call: a thread of its own
		}(p[0])
	}
	time.Sleep(200 * time.Millisecond)
	for _, w := range writers {
		syscall.Write(w, []byte{1})
	}
	wg.Wait()
	fmt.Printf("%d goroutines each held a thread in a read\n", n)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gostall MODE [ARG]")
		os.Exit(64)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "deadlock":
		deadlock()
	case "asleep":
		never := make(chan int)
		go func() { fmt.Fprintln(os.Stderr, "gostall: nobody sends") }()
		fmt.Println(<-never)
	case "map":
		writeMap(false)
	case "map-locked":
		writeMap(true)
	case "stack":
		debug.SetMaxStack(64 << 20) // overflow in milliseconds, not after a gigabyte
		fmt.Println(recurse(0))
	case "memory":
		b := make([]byte, 1<<40)
		b[len(b)-1] = 1
		fmt.Println(len(b))
	case "threads":
		n, err := strconv.Atoi(args[0])
		if err != nil {
			os.Exit(64)
		}
		threads(n)
	case "sleep":
		s := seconds(args)
		filled("time.Sleep", s, func(done chan string) {
			go func() {
				time.Sleep(time.Duration(s * float64(time.Second)))
				done <- "filled"
			}()
		})
	case "timer":
		s := seconds(args)
		filled("time.AfterFunc", s, func(done chan string) {
			time.AfterFunc(time.Duration(s*float64(time.Second)), func() { done <- "filled" })
		})
	case "ticks":
		s := seconds(args)
		filled("a ticker", s, func(done chan string) {
			go func() {
				t := time.NewTicker(100 * time.Millisecond)
				for i := 0; i < int(s*10); i++ {
					<-t.C
				}
				done <- "filled"
			}()
		})
	default:
		fmt.Fprintln(os.Stderr, "gostall: unknown mode", os.Args[1])
		os.Exit(64)
	}
}
