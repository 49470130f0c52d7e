// A minimal text/event-stream parser: feed chunks, get {event, data} records.
export function sseParser(onEvent) {
  let buf = '';
  let event = '';
  let data = [];
  return (chunk) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) onEvent({ event: event || 'message', data: data.join('\n') });
        event = ''; data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      } else if (line.startsWith('event:')) {
        event = line.slice(6).trim();
      }
    }
  };
}
