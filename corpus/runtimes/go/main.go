// gostall: goroutines that wait for each other, while a time.Ticker keeps the Go runtime's own
// "all goroutines are asleep" check from firing.
//
// Usage: gostall deadlock | sleep SECONDS
//
// deadlock: two goroutines take two sync.Mutexes in opposite order, a third receives from a
// 100 ms ticker forever, main blocks in select{}. qualify ends the program for its goroutine dump
// (SIGQUIT) and names the goroutines and frames -> `deadlock`. Never exits.
// sleep:    main receives from a channel a goroutine fills after time.Sleep(SECONDS) -> `ok`.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
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

func sleep(seconds float64) {
	done := make(chan string)
	go func() {
		time.Sleep(time.Duration(seconds * float64(time.Second)))
		done <- "filled"
	}()
	fmt.Printf("channel %s after %.1f s\n", <-done, seconds)
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "sleep" {
		s, err := strconv.ParseFloat(os.Args[2], 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gostall: SECONDS must be a number:", err)
			os.Exit(2)
		}
		sleep(s)
		return
	}
	deadlock()
}
