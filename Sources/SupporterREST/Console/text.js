// The console's one rule for showing text from the server (SPEC §4.2, the rule the CLIs and logs follow): C0 controls,
// DEL, C1 controls (U+0080–U+009F), the bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the
// line and paragraph separators (U+2028, U+2029) and the backslash are shown escaped — `\\`, `\n`, `\r`, `\t`, `\xHH`
// below U+0100, `\u{HHHH}` above — so that a name or a description can neither reorder nor hide what a person reads
// (issue 20, finding 12). Everything else is shown as it is. The result is only ever set through textContent.

const ESCAPED = /[\u0000-\u001F\u005C\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/gu;

function hex(value, digits) {
  return value.toString(16).toUpperCase().padStart(digits, '0');
}

/** `value` as text, with SPEC §4.2's classes escaped visibly. */
export function visibleText(value) {
  return String(value).replace(ESCAPED, (character) => {
    switch (character) {
      case '\\': return '\\\\';
      case '\n': return '\\n';
      case '\r': return '\\r';
      case '\t': return '\\t';
      default: {
        const code = character.codePointAt(0);
        return code < 0x100 ? `\\x${hex(code, 2)}` : `\\u{${hex(code, 4)}}`;
      }
    }
  });
}

/** Sets `node`'s text to `value` shown by `visibleText`. */
export function setText(node, value) {
  node.textContent = visibleText(value);
}
