// The Rolecall console's one script: a conversation's new events, live, over Server-Sent
// Events. The server sends each event as the HTML of one timeline line (rendered and escaped
// by the same template as the page); this puts it at the end of the list, once.
"use strict";

(function () {
  const list = document.querySelector("ol.timeline[data-stream]");
  const status = document.getElementById("live");
  if (!list || !status || !("EventSource" in window)) {
    return;
  }

  function say(state, text) {
    status.dataset.state = state;
    status.textContent = text;
  }

  const source = new EventSource(list.dataset.stream);

  source.addEventListener("ready", function () {
    say("live", "Live: new events appear here as they are committed.");
  });

  source.addEventListener("timeline", function (message) {
    const holder = document.createElement("template");
    holder.innerHTML = message.data.trim();
    const line = holder.content.firstElementChild;
    if (!line || document.getElementById(line.id)) {
      return; // sent before the browser reconnected, and shown already
    }
    line.classList.add("new");
    list.appendChild(line);
    const empty = document.querySelector("p.empty");
    if (empty) {
      empty.remove();
    }
  });

  function stop(message) {
    source.close();
    say("closed", message.data);
  }

  source.addEventListener("ended", stop);
  source.addEventListener("problem", stop);

  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      say("closed", "Live updates stopped: reload the page.");
    } else {
      say("connecting", "Reconnecting…");
    }
  });
})();
