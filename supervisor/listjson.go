package supervisor

import (
	"net/http"
	"strconv"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/jsoncache"
	"github.com/svcd/svcd/supervisor/tasks"
)

// List pages are written around their entries' kept JSON (jsoncache),
// with the bytes api.WriteOK wrote for the map each answer was: its keys
// in encoding/json's sorted order.

// convJSONKept is how many conversations' encodings GET
// /v1/renewal/conversations keeps per generation (jsoncache): a few
// default pages' worth; a client walking all 16,384 only pays the
// encoding it paid before.
const convJSONKept = 2048

func newConvJSON() *jsoncache.Entries[raftstore.Conversation] {
	return jsoncache.New(convJSONKept, (*raftstore.Conversation).Same, (*raftstore.Conversation).Clone)
}

// writeConvList answers one page of conversations with the bytes
// api.WriteOK writes for {"conversations", "count", "next_cursor"
// (absent on the last page), "total"} — the map this answer was, its keys
// in encoding/json's sorted order — each conversation's JSON from
// s.convJSON while the record is unchanged.
func (s *Server) writeConvList(w http.ResponseWriter, page []raftstore.Conversation, next string, total int) error {
	data, err := s.convJSON.AppendList(append(api.OKBody(64+600*len(page)), `{"conversations":`...), page,
		func(c *raftstore.Conversation) string { return c.LocalID })
	if err != nil {
		return err
	}
	data = strconv.AppendInt(append(data, `,"count":`...), int64(len(page)), 10)
	if next != "" {
		if data, err = api.AppendJSON(append(data, `,"next_cursor":`...), next); err != nil {
			return err
		}
	}
	data = strconv.AppendInt(append(data, `,"total":`...), int64(total), 10)
	api.WriteOKBody(w, append(data, '}'))
	return nil
}

// writeTaskList answers one page of tasks as {"count", "limit",
// "next_cursor" (absent on the last page), "tasks"}, each summary's JSON
// from s.taskJSON while the task is unchanged.
func (s *Server) writeTaskList(w http.ResponseWriter, list []tasks.Summary, limit int, next string) error {
	data := strconv.AppendInt(append(api.OKBody(64+400*len(list)), `{"count":`...), int64(len(list)), 10)
	data = strconv.AppendInt(append(data, `,"limit":`...), int64(limit), 10)
	var err error
	if next != "" {
		if data, err = api.AppendJSON(append(data, `,"next_cursor":`...), next); err != nil {
			return err
		}
	}
	if data, err = s.taskJSON.AppendList(append(data, `,"tasks":`...), list, func(t *tasks.Summary) string { return t.ID }); err != nil {
		return err
	}
	api.WriteOKBody(w, append(data, '}'))
	return nil
}
