//go:build race

package main

// raceDetector is whether the tests were built with -race.
const raceDetector = true
