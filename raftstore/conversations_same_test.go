package raftstore

import (
	"testing"

	"github.com/svcd/svcd/shared/jsoncache/jsoncachetest"
)

// Every field of a conversation, and of its client loop, takes part in
// Same, and a Clone shares nothing with the original.
func TestConversationSameSeesEveryField(t *testing.T) {
	jsoncachetest.SameSeesEveryField(t, (*Conversation).Same, (*Conversation).Clone)
}
