// The web console's escaping of server text (Sources/SupporterREST/Console/text.js), run by Node without a browser:
// `node tests/web/console_text_test.mjs`. Prints `PASS name` or `FAIL name: why` per case; exits 1 if any failed.
import { setText, visibleText } from '../../Sources/SupporterREST/Console/text.js';

const cases = [
  ['plain text and other scripts pass', 'Jürgen Müller — 東京 😀', 'Jürgen Müller — 東京 😀'],
  ['C1 controls as \\xHH', 'a\u009Bb\u0085c\u0080d\u009Fe', 'a\\x9Bb\\x85c\\x80d\\x9Fe'],
  ['bidi controls as \\u{HHHH}', '\u202Eevil\u202C \u200E\u200F\u2066\u2067\u2068\u2069\u061C',
    '\\u{202E}evil\\u{202C} \\u{200E}\\u{200F}\\u{2066}\\u{2067}\\u{2068}\\u{2069}\\u{061C}'],
  ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u{2028}b\\u{2029}c'],
  ['C0 controls and DEL', 'a\nb\rc\td\u0000e\u001Bf\u007Fg', 'a\\nb\\rc\\td\\x00e\\x1Bf\\x7Fg'],
  ['the backslash, so the result reads back one way', 'C:\\x9B', 'C:\\\\x9B'],
  ['markup is text', '<img src=x onerror=alert(1)>', '<img src=x onerror=alert(1)>'],
  ['numbers and null become text', 42, '42'],
];

let failed = 0;
for (const [name, input, expected] of cases) {
  const got = visibleText(input);
  if (got === expected) {
    console.log(`PASS ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL ${name}: ${JSON.stringify(got)} != ${JSON.stringify(expected)}`);
  }
}
const node = { textContent: '' };
setText(node, 'x\u202Ey');
if (node.textContent === 'x\\u{202E}y') {
  console.log('PASS setText sets the escaped text');
} else {
  failed += 1;
  console.log(`FAIL setText sets the escaped text: ${JSON.stringify(node.textContent)}`);
}
process.exit(failed === 0 ? 0 : 1);
