//go:build race

package jail

const raceEnabled = true
