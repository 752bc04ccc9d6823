// Photos from the camera (#camera): a live preview (getUserMedia, the back
// camera on phones), a shutter, each photo labelled with the class picked
// and handed to dataset.js (addPhoto: made into features at once, the photo
// itself kept only when the volunteer ticks "keep the photos"), undo of the
// last. Where getUserMedia is missing or refused the page says so, and the
// file input with capture (the phone's own camera app) stays beside it.
import { addPhoto, undoPhoto } from './dataset.js';
import { $, page, showError } from './page.js';

let stream = null;
// the frame drawn where its pixels are read back (the CPU's, not a GPU's copy)
const frame = document.createElement('canvas');
const context = frame.getContext('2d', { willReadFrequently: true });
const cameraError = (e) => showError(e, 'camera-error');

// Why the camera gave no stream, in words (getUserMedia's DOMException names).
function whyNoCamera(e) {
  if (e.name === 'NotAllowedError' || e.name === 'SecurityError')
    return 'The camera was refused. Allow it in the browser\'s settings for this site and press "Start the camera" ' +
      'again, or take photos with the camera app (the button above).';
  if (e.name === 'NotFoundError' || e.name === 'OverconstrainedError')
    return 'This device has no camera the browser can use; take photos with the camera app (the button above).';
  return `The camera did not start (${e.message || e.name}); take photos with the camera app (the button above).`;
}

async function startCamera() {
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia)
    throw new Error('This browser gives the page no camera (browsers give one to HTTPS pages only); take photos with ' +
      'the camera app (the button above).');
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
  } catch (e) {
    throw new Error(whyNoCamera(e));
  }
  const video = $('camera-preview');
  video.srcObject = stream;
  await video.play();
  video.hidden = $('camera-controls').hidden = false;
  $('camera-start').hidden = true;
  $('shutter').disabled = false;
}

function stopCamera() {
  if (stream) stream.getTracks().forEach((track) => track.stop());
  stream = null;
  $('camera-preview').srcObject = null;
  $('camera-preview').hidden = $('camera-controls').hidden = true;
  $('camera-start').hidden = false;
}

const pickedClass = () => Number($('camera-class').value);
const keepPhotos = () => $('keep-photos').checked;

// The preview's frame now: its pixels encoded, and a PNG of them when kept.
async function takePhoto() {
  const video = $('camera-preview'), width = video.videoWidth, height = video.videoHeight;
  if (!width || !height) throw new Error('The camera gives no picture yet; try again in a moment.');
  frame.width = width;
  frame.height = height;
  context.drawImage(video, 0, 0, width, height);
  const { data } = context.getImageData(0, 0, width, height);
  const photo = keepPhotos() ? await new Promise((resolve) => frame.toBlob(resolve, 'image/png')) : null;
  await addPhoto({ rgba: data, width, height }, pickedClass(), photo);
}

// Binds the camera's controls, the classes of the federation in the picker.
export function bindCamera() {
  $('camera-class').replaceChildren(...page.description.classes.map((c, i) => new Option(c, String(i))));
  const act = (fn) => () => { showError(null, 'camera-error'); return fn().catch(cameraError); };
  $('camera-start').onclick = act(startCamera);
  $('camera-stop').onclick = stopCamera;
  $('shutter').onclick = () => {
    $('shutter').disabled = true; // one photo at a time
    act(takePhoto)().finally(() => { $('shutter').disabled = !stream; });
  };
  $('undo').onclick = act(undoPhoto);
  // a photo from the camera app: the file is the photo, kept as it came when
  // asked (a PNG or JPEG by its name and bytes, as a folder's images)
  $('camera-file').onchange = (e) => {
    const file = e.target.files[0];
    e.target.value = '';
    if (file) act(() => addPhoto({ blob: file, name: file.name }, pickedClass(), keepPhotos() ? file : null))();
  };
  // what is kept, said as the box is (a reload may restore it ticked)
  const sayKept = () => {
    $('camera-kept').textContent = keepPhotos() ?
      'Each photo becomes features at once, and the photo itself is kept in this browser too (never uploaded; ' +
      '"Undo" and "Forget me" delete it).' :
      'Each photo becomes features at once; only the features are kept in this browser, the photo itself is not.';
  };
  sayKept();
  $('keep-photos').onchange = sayKept;
}
