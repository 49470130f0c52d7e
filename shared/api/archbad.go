package api

// Deliberately bad import (reverted in the next commit): shows TestLayers failing.
import _ "github.com/svcd/svcd/raftstore"
