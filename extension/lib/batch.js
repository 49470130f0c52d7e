// The frames that carry a stream's events to the daemon. Events that
// arrive together (a burst the page read in one go) go as one
// stream_events frame when the daemon's hello_ok took the stream_events
// capability (docs/bridge-protocol.md): one ws.send, one frame to parse,
// instead of one per event. A lone event, or any event for a daemon that
// did not take it, goes as a plain stream_event frame, as before.
export const CAP_STREAM_EVENTS = 'stream_events';
export const MAX_BATCH_EVENTS = 4096; // the daemon's bound (bridgeproto.MaxBatchEvents)

// streamFrames returns the JSON text of the frames for events (each {seq,
// event, data}) of request id. maxBytes is the daemon's max_message_bytes:
// a batch whose text could be larger (UTF-8: at most 3 bytes per UTF-16
// unit) is split in halves until each part fits.
export function streamFrames(id, events, { batched, maxBytes }) {
  const single = (e) => JSON.stringify({ type: 'stream_event', requestId: id, seq: e.seq, event: e.event, data: e.data });
  if (!batched || events.length < 2) return events.map(single);
  const out = [];
  const limit = maxBytes > 0 ? maxBytes : 1 << 20;
  const put = (evs) => {
    if (evs.length === 1) { out.push(single(evs[0])); return; }
    if (evs.length > MAX_BATCH_EVENTS) { const h = evs.length >> 1; put(evs.slice(0, h)); put(evs.slice(h)); return; }
    const text = JSON.stringify({ type: 'stream_events', requestId: id, events: evs });
    if (text.length * 3 > limit) { const h = evs.length >> 1; put(evs.slice(0, h)); put(evs.slice(h)); return; }
    out.push(text);
  };
  put(events);
  return out;
}
