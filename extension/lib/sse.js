// A minimal text/event-stream parser: feed chunks, get {event, data} records.
// It walks each chunk by index and keeps only the unfinished line: a chunk
// of thousands of events (a burst batched in the page) costs one pass.
export function sseParser(onEvent) {
  let buf = '';
  let event = '';
  let data = [];
  return (chunk) => {
    buf = buf ? buf + chunk : chunk;
    let start = 0;
    let i;
    while ((i = buf.indexOf('\n', start)) >= 0) {
      const end = i > start && buf.charCodeAt(i - 1) === 13 ? i - 1 : i;
      if (end === start) {
        if (data.length) onEvent({ event: event || 'message', data: data.join('\n') });
        event = ''; data = [];
      } else if (buf.startsWith('data:', start)) {
        data.push(buf.slice(buf.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end));
      } else if (buf.startsWith('event:', start)) {
        event = buf.slice(start + 6, end).trim();
      }
      start = i + 1;
    }
    buf = start ? buf.slice(start) : buf;
  };
}
