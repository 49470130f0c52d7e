package codexrpc

import "time"

// closeGrace is how long Close waits for the child to leave after stdin closes.
const closeGrace = 3 * time.Second

func timeAfter() <-chan time.Time { return time.After(closeGrace) }
