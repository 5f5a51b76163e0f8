// Follows a yard event stream with npm's eventsource package, used as its
// documentation shows: credentials and a resume id added through its fetch
// option. Prints one JSON line when open and one per event; exits after
// `want` events. Usage: node eventsource.mjs URL USER PASSWORD LAST_ID WANT
import { EventSource } from 'eventsource';

const [url, user, pass, last, want] = process.argv.slice(2);
const authorization = 'Basic ' + Buffer.from(`${user}:${pass}`).toString('base64');
const es = new EventSource(url, {
  fetch: (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...init.headers, Authorization: authorization, ...(last ? { 'Last-Event-ID': last } : {}) },
    }),
});
let n = 0;
const types = ['dog.created', 'dog.updated', 'bark.created', 'bark.succeeded'];
for (const t of types) {
  es.addEventListener(t, (e) => {
    console.log(JSON.stringify({ id: e.lastEventId, type: e.type, data: JSON.parse(e.data) }));
    if (++n >= Number(want)) {
      es.close();
      process.exit(0);
    }
  });
}
es.onopen = () => console.log(JSON.stringify({ open: true }));
es.onerror = (e) => console.error(`eventsource error: ${e.message ?? ''} ${e.code ?? ''}`);
setTimeout(() => {
  console.error('no events within 30 s');
  process.exit(2);
}, 30000);
