// "Try it": a new image classified with the volunteer's personal prompt,
// its five likeliest classes shown with their probabilities; a file that is
// no PNG or JPEG, or does not decode, refused with why, in place of the
// last result.
import { $, page, requireModel, showError } from './page.js';

export async function tryImage(file) {
  showError(null, 'try-error');
  $('try-result').replaceChildren();
  requireModel();
  const { best, probabilities } = await page.compute.call('predict', { image: { blob: file, name: file.name } })
    .catch((e) => { throw new Error(`${file.name}: ${e.message}`); });
  const order = Array.from(probabilities.keys()).sort((a, b) => probabilities[b] - probabilities[a]).slice(0, 5);
  // built as elements: the task's class names as text, never markup, and no
  // inline style (the page's content security policy allows none)
  const element = (tag, props = {}, ...children) => {
    const e = Object.assign(document.createElement(tag), props);
    e.append(...children);
    return e;
  };
  const classes = page.description.classes;
  const bars = element('div', { className: 'bars' });
  for (const c of order) {
    const percent = `${(100 * probabilities[c]).toFixed(1)}%`, bar = element('div', { className: 'bar' });
    bar.style.width = percent;
    bars.append(element('span', { className: c === best ? 'best' : '' }, classes[c]), bar, element('span', {}, percent));
  }
  const preview = element('img', { src: URL.createObjectURL(file), alt: '', className: 'preview' });
  $('try-result').replaceChildren(element('p', {}, preview, ' ', element('strong', {}, classes[best])), bars);
}
