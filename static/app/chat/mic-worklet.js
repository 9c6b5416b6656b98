// AudioWorklet: microphone samples -> 16 kHz PCM16 mono, posted in 100 ms chunks.
// Loaded with audioWorklet.addModule() from this origin, so the console's strict CSP allows it.
const TARGET_RATE = 16000;
const CHUNK = 1600; // samples per message (100 ms)

class Pcm16Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / TARGET_RATE; // input samples per output sample
    this.pos = 0;
    this.out = new Int16Array(CHUNK);
    this.filled = 0;
    this.port.onmessage = (e) => { if (e.data === "flush") this.flush(); };
  }

  flush() {
    if (this.filled) this.port.postMessage(this.out.slice(0, this.filled).buffer);
    this.filled = 0;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || !channels.length) return true;
    const frames = channels[0].length;
    for (; this.pos < frames; this.pos += this.step) {
      // Average the channels, and the input samples of one output step (a simple low-pass).
      const start = Math.floor(this.pos);
      const end = Math.min(frames, Math.max(start + 1, Math.floor(this.pos + this.step)));
      let sum = 0;
      for (const ch of channels) for (let i = start; i < end; i++) sum += ch[i];
      const v = Math.max(-1, Math.min(1, sum / ((end - start) * channels.length)));
      this.out[this.filled++] = v < 0 ? v * 0x8000 : v * 0x7fff;
      if (this.filled === CHUNK) {
        this.port.postMessage(this.out.buffer, [this.out.buffer]);
        this.out = new Int16Array(CHUNK);
        this.filled = 0;
      }
    }
    this.pos -= frames;
    return true;
  }
}

registerProcessor("pcm16-capture", Pcm16Capture);
